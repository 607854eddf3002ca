import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  LogQueryWidget,
  type Metric,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { FilterPattern, MetricFilter, type ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export const METRIC_NAMESPACE = 'AgentConversationService';

/**
 * The log lines the metrics come from (written by the handler wrapper and the sandbox and
 * conversation services), as CloudWatch Logs metric filters: no extra code in any function and
 * nothing billed until a line matches.
 */
const logMetrics = {
  /** The wrapper's `{"message":"request","status":...}` line with a 5xx status. */
  ServerErrors: {
    pattern: FilterPattern.all(
      FilterPattern.stringValue('$.message', '=', 'request'),
      FilterPattern.numberValue('$.status', '>=', 500),
    ),
    value: '1',
    unit: 'Count',
  },
  SandboxStarts: { pattern: FilterPattern.stringValue('$.message', '=', 'sandbox.started'), value: '1', unit: 'Count' },
  SandboxFailures: {
    pattern: FilterPattern.stringValue('$.message', '=', 'sandbox.failed'),
    value: '1',
    unit: 'Count',
  },
  SandboxStartLatency: {
    pattern: FilterPattern.all(
      FilterPattern.stringValue('$.message', '=', 'sandbox.started'),
      FilterPattern.numberValue('$.startLatencyMs', '>=', 0),
    ),
    value: '$.startLatencyMs',
    unit: 'Milliseconds',
  },
  ConversationsStarted: {
    pattern: FilterPattern.stringValue('$.message', '=', 'conversation.started'),
    value: '1',
    unit: 'Count',
  },
} as const;

export type LogMetricName = keyof typeof logMetrics;

export interface ObservabilityProps {
  functionLogs: ILogGroup;
  api: HttpApi;
  failureQueue: IQueue;
  alarmTopic: ITopic;
}

/** Metrics that matter, alarms on them (to the alarm topic), and one dashboard. */
export class Observability extends Construct {
  readonly metrics = {} as Record<LogMetricName, Metric>;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    for (const [name, m] of Object.entries(logMetrics) as [LogMetricName, (typeof logMetrics)[LogMetricName]][]) {
      const filter = new MetricFilter(this, name, {
        logGroup: props.functionLogs,
        filterPattern: m.pattern,
        metricNamespace: METRIC_NAMESPACE,
        metricName: name,
        metricValue: m.value,
        unit: m.unit as never,
      });
      this.metrics[name] = filter.metric({ statistic: 'Sum', period: Duration.minutes(5) });
    }
    const latency = (stat: string) =>
      this.metrics.SandboxStartLatency.with({ statistic: stat, period: Duration.minutes(15) });
    const apiErrors = props.api.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' });
    const queued = props.failureQueue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(5),
      statistic: 'Maximum',
    });

    const alarm = (name: string, metric: IMetric, threshold: number, description: string) => {
      const a = new Alarm(this, name, {
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      a.addAlarmAction(new SnsAction(props.alarmTopic));
      this.alarms.push(a);
    };
    alarm(
      'ApiServerErrors',
      apiErrors,
      5,
      'The API answered 5 or more 5xx in 5 minutes (handlers, authorizer or integration).',
    );
    alarm(
      'SandboxStartFailures',
      this.metrics.SandboxFailures.with({ period: Duration.minutes(15) }),
      3,
      '3 or more sandboxes failed to start in 15 minutes.',
    );
    alarm('SlowSandboxStarts', latency('p90'), 180_000, 'p90 sandbox start latency above 3 minutes over 15 minutes.');
    alarm(
      'AsyncFailures',
      queued,
      1,
      'An event or scheduled invocation failed after its retries: see the failure queue.',
    );

    const dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(6) });
    dashboard.addWidgets(
      new GraphWidget({
        title: 'API requests and errors',
        left: [
          props.api.metricCount({ period: Duration.minutes(5) }),
          props.api.metricClientError({ period: Duration.minutes(5) }),
          apiErrors,
        ],
        right: [this.metrics.ServerErrors],
        width: 12,
      }),
      new GraphWidget({
        title: 'API latency (ms)',
        left: [props.api.metricLatency({ statistic: 'p50' }), props.api.metricLatency({ statistic: 'p99' })],
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new GraphWidget({
        title: 'Sandbox starts and failures',
        left: [this.metrics.SandboxStarts, this.metrics.SandboxFailures],
        width: 8,
      }),
      new GraphWidget({
        title: 'Sandbox start latency (ms)',
        left: [latency('p50'), latency('p90'), latency('Maximum')],
        width: 8,
      }),
      new GraphWidget({ title: 'Conversations started', left: [this.metrics.ConversationsStarted], width: 8 }),
    );
    dashboard.addWidgets(
      new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 8 }),
      new GraphWidget({ title: 'Failed async invocations (queued)', left: [queued], width: 8 }),
      new LogQueryWidget({
        title: 'Recent errors',
        logGroupNames: [props.functionLogs.logGroupName],
        queryLines: [
          'fields @timestamp, message, route, status, requestId, error.message',
          'filter level = "ERROR" or status >= 500',
          'sort @timestamp desc',
          'limit 20',
        ],
        width: 8,
      }),
    );
  }
}
