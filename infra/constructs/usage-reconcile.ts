import { Duration } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** The UTC time the reconcile runs each night: after the day before has settled (docs/billing.md). */
export const RECONCILE_CRON = { hour: '1', minute: '15' } as const;

/**
 * The daily usage reconcile's schedule (shared/usage/reconcile.ts): EventBridge Scheduler invokes the
 * function once a night; a failed invocation is retried twice, then goes to the failure queue (the next
 * night looks at the same day again anyway).
 */
export class UsageReconcileSchedule extends Construct {
  readonly schedule: Schedule;

  constructor(scope: Construct, id: string, props: { fn: IFunction; deadLetterQueue: IQueue }) {
    super(scope, id);
    this.schedule = new Schedule(this, 'Schedule', {
      description:
        'Usage reconcile: the last two days of totals from their records, running-slot and conversation counters',
      schedule: ScheduleExpression.cron(RECONCILE_CRON),
      target: new LambdaInvoke(props.fn, {
        deadLetterQueue: props.deadLetterQueue,
        retryAttempts: 2,
        maxEventAge: Duration.hours(6),
      }),
    });
  }
}
