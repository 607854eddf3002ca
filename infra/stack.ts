import { createHash } from 'node:crypto';
import {
  type App,
  ArnFormat,
  CfnOutput,
  Duration,
  NestedStack,
  RemovalPolicy,
  Stack,
  Validations,
  type StackProps,
} from 'aws-cdk-lib';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Key } from 'aws-cdk-lib/aws-kms';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { Api } from '#infra/constructs/api.ts';
import { BillingExports } from '#infra/constructs/billing-exports.ts';
import { BindingDeadline } from '#infra/constructs/binding-deadline.ts';
import { BridgeSocket } from '#infra/constructs/bridge-socket.ts';
import { ImageSize } from '#infra/constructs/image-size.ts';
import { PublicFront } from '#infra/constructs/front.ts';
import { CognitoSignIn } from '#infra/constructs/sign-in.ts';
import { STREAM_STAGE, StreamSockets } from '#infra/constructs/stream.ts';
import { Observability } from '#infra/constructs/observability.ts';
import { SandboxInfra } from '#infra/constructs/sandboxes.ts';
import { ServiceFunction } from '#infra/constructs/service-function.ts';
import { DataTables } from '#infra/constructs/tables.ts';
import { UsageReconcileSchedule } from '#infra/constructs/usage-reconcile.ts';
import { loadConfig, type Config } from '#infra/config.ts';
import {
  authorizerFunction,
  billingExportFunction,
  bridgeSocketConnectFunction,
  ecsEventsFunction,
  fallbackFunction,
  sandboxSnapshotsDeleteFunction,
  poolRefillFunction,
  streamConnectFunction,
  streamDisconnectFunction,
  streamMessageFunction,
  streamResendFunction,
  sweeperFunction,
  usageReconcileFunction,
  type EventFunctionDef,
} from '#shared/functions.ts';
import { acknowledgeFindings } from '#infra/nag.ts';
import type { FunctionAccess, GrantTargets } from '#infra/iam.ts';
import { UsageBus } from '#infra/constructs/usage-bus.ts';
import { MAX_ROUTE_TIMEOUT_SECONDS, ROUTE_TIMEOUT_SECONDS, type RouteDef } from '#shared/http/route.ts';
import { llmGatewayRoute, routes } from '#shared/routes.ts';
import { BINDING_ACK_MS } from '#shared/sandboxes/pool-store.ts';
import { tableEnvVar, tableKeys } from '#shared/store/tables.ts';
import { environmentNames } from '#shared/wiring/needs.ts';
import { LlmGatewayFront, platformLlmKeyArns } from '#infra/constructs/llm-gateway.ts';

/** A route function's time-out: its entry's, or the default; never past API Gateway's 30 s integration limit. */
export function routeTimeout(route: RouteDef): Duration {
  const seconds = route.timeoutSeconds ?? ROUTE_TIMEOUT_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_ROUTE_TIMEOUT_SECONDS) {
    throw new Error(
      `Route ${route.id}: timeoutSeconds ${seconds} is not 1..${MAX_ROUTE_TIMEOUT_SECONDS} (API Gateway answers 503 after 30 s)`,
    );
  }
  return Duration.seconds(seconds);
}

export interface ServiceStackProps extends StackProps {
  config: Config;
  /** The route table (default `shared/routes.ts`; the quota test adds generated routes). */
  routes?: readonly RouteDef[];
}

/** Route functions per nested stack at most: with the heaviest route's resources, well under CloudFormation's quotas. */
export const ROUTES_PER_STACK = 20;

/**
 * The nested stack each route's function goes in: one per route-table tag, a tag's routes in chunks of
 * ROUTES_PER_STACK in table order (`Routes-sandboxes`, `Routes-conversations-2`). A route added at the end
 * of its tag moves no other route, so no deployed function is replaced.
 */
export function routeStackNames(table: readonly RouteDef[]): Map<string, string> {
  const byTag = new Map<string, RouteDef[]>();
  for (const route of table) byTag.set(route.tag, [...(byTag.get(route.tag) ?? []), route]);
  const out = new Map<string, string>();
  for (const [tag, list] of byTag)
    list.forEach((route, i) => {
      const chunk = Math.floor(i / ROUTES_PER_STACK);
      out.set(route.id, `Routes-${tag}${chunk ? `-${chunk + 1}` : ''}`);
    });
  return out;
}

/**
 * A function's own name, for one whose ARN is needed before it exists: `<stack name>-<id>` (stack
 * names are unique per account and region), a long stack name cut and told apart by a hash, within
 * Lambda's 64 characters.
 */
export function functionNameOf(stackName: string, id: string): string {
  const name = `${stackName}-${id}`;
  if (name.length <= 64) return name;
  const hash = createHash('sha256').update(stackName).digest('hex').slice(0, 8);
  return `${stackName.slice(0, 64 - id.length - 10)}-${hash}-${id}`;
}

/**
 * The whole deployment: API, functions, tables, secrets key, sandbox infrastructure, observability.
 * Resources of the deployment (a construct of `infra/constructs/`) are made here, in this stack; each route's
 * function, role, API route and integration in the nested stack `routeStackNames` gives it, which keeps every
 * template within CloudFormation's quotas (`test/infra/quotas.test.ts`). Cross-stack references cost
 * parameters and outputs: route stacks read from this stack, never the reverse.
 */
export class ConversationServiceStack extends Stack {
  readonly data: DataTables;
  readonly sandboxes: SandboxInfra;
  readonly secretsKey: Key;
  readonly failureQueue: Queue;
  readonly functionLogs: LogGroup;
  readonly api: Api;
  readonly bridgeSocket: BridgeSocket;
  readonly stream: StreamSockets;
  readonly front: PublicFront;
  /** The stack's own Cognito issuer, unless an external one (or keys only) is configured. */
  signIn?: CognitoSignIn;
  readonly observability: Observability;
  /** Every Lambda of the deployment by id: route ids, then `authorizer`, `fallback`, `ecsEvents`, `sweeper`. */
  readonly functions = new Map<string, { fn: ServiceFunction; access: FunctionAccess; async: boolean }>();
  /** The route table this stack was built from. */
  readonly routeTable: readonly RouteDef[];
  /** The nested stacks of the route functions, by name. */
  readonly routeStacks = new Map<string, NestedStack>();

  constructor(scope: Construct, id: string, props: ServiceStackProps) {
    super(scope, id, props);
    const { config } = props;
    const table = props.routes ?? (routes as readonly RouteDef[]);
    this.routeTable = table;
    const retention = config.logRetentionDays as RetentionDays;

    this.data = new DataTables(this, 'Tables');
    this.secretsKey = new Key(this, 'SecretsKey', {
      description: 'Seals user secrets (LLM keys, tokens) and the service keys kept in the keys table',
      enableKeyRotation: true,
      // The tables are retained, and what they hold sealed is unreadable without this key.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.sandboxes = new SandboxInfra(this, 'Sandboxes', { config, retention });
    this.failureQueue = new Queue(this, 'FailedInvocations', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.functionLogs = new LogGroup(this, 'FunctionLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });

    this.bridgeSocket = new BridgeSocket(this, 'BridgeSocket', {
      throttle: { rateLimit: config.apiThrottleRateLimit, burstLimit: config.apiThrottleBurstLimit },
    });
    // Sandbox programs connect to it; without the variable (locally) a program long-polls.
    this.sandboxes.setProgramEnvironment('BRIDGE_SOCKET_URL', this.bridgeSocket.url);
    this.stream = new StreamSockets(this, 'Stream', {
      config,
      accessLogs: new LogGroup(this, 'StreamAccessLogs', { retention, removalPolicy: RemovalPolicy.DESTROY }),
    });
    const usageBus = new UsageBus(this, 'UsageBus').bus;
    const targets: GrantTargets = {
      usageBus,
      stream: { apiId: this.stream.api.apiId, stageName: STREAM_STAGE },
      secretsKey: this.secretsKey,
      sandbox: {
        cluster: this.sandboxes.cluster,
        familyPrefix: this.sandboxes.familyPrefix,
        roles: [this.sandboxes.taskRole, this.sandboxes.executionRole],
        workspaces: this.sandboxes.workspaces,
      },
      bridgeSocket: { connectionsArn: this.bridgeSocket.connectionsArn },
      platformLlmKeys: platformLlmKeyArns(config.platformLlms),
      grownBytesIndexArn: `${this.data.tables.events.tableArn}/index/grownBytes`,
      stripeKeyArn: config.stripe?.apiKeyArn,
    };
    /** Every variable a declaration can call for, by name (shared/wiring/needs.ts says which it gets). */
    const values: Record<string, string> = {
      SECRETS_KEY_ID: this.secretsKey.keyId,
      SANDBOX_SPECS: this.toJsonString(this.sandboxes.specRegistry(new Date().toISOString())),
      ECS_CLUSTER_ARN: this.sandboxes.cluster.clusterArn,
      SANDBOX_SUBNET_IDS: this.sandboxes.vpc.publicSubnets.map((s) => s.subnetId).join(','),
      SANDBOX_SECURITY_GROUP_ID: this.sandboxes.securityGroup.securityGroupId,
      WORKSPACE_BUCKET: this.sandboxes.workspaces.bucketName,
      SANDBOX_TASK_ROLE_ARN: this.sandboxes.taskRole.roleArn,
      SANDBOX_EXECUTION_ROLE_ARN: this.sandboxes.executionRole.roleArn,
      SANDBOX_START_TIMEOUT_SECONDS: String(config.sandboxStartTimeoutSeconds),
      SANDBOX_IDLE_MINUTES: String(config.sandboxIdleMinutes),
      MAX_RUNNING_SANDBOXES: String(config.maxRunningSandboxes),
      BRIDGE_SOCKET_ENDPOINT: this.bridgeSocket.managementEndpoint,
      STREAM_CALLBACK_URL: this.stream.callbackUrl,
      CORS_ORIGINS: config.corsAllowedOrigins.join(','),
      // Empty: the built-in plans (shared/plans/model.ts).
      PLANS: config.plans === undefined ? '' : JSON.stringify(config.plans),
      // Empty: the built-in prices (shared/usage/prices.ts, config/prices.json's).
      PRICES: config.prices === undefined ? '' : JSON.stringify(config.prices),
      // Empty: no platform models (docs/platform-llms.md).
      PLATFORM_LLMS: config.platformLlms === undefined ? '' : JSON.stringify(config.platformLlms),
      LLM_CONCURRENT_CALLS_PER_ORG: String(config.llmConcurrentCallsPerOrg),
      // Empty: no Stripe (docs/billing.md).
      STRIPE_API_KEY_ARN: config.stripe?.apiKeyArn ?? '',
      STRIPE_API_BASE: config.stripe?.apiBase ?? '',
      STRIPE_METER_EVENTS_BASE: config.stripe?.meterEventsBase ?? '',
      USAGE_RETENTION_DAYS: String(config.usageRetentionDays),
      // Sign-in: an external issuer's here; the stack's own Cognito pool's are set once it exists (below).
      OIDC_ISSUER: config.oidcIssuer ?? '',
      OIDC_AUDIENCE: config.oidcAudience ?? '',
      OIDC_CLIENT_ID: config.oidcClientId ?? config.oidcAudience ?? '',
      SIGNUP_MODE: config.signupMode,
      OPERATORS: config.operators.join(','),
      AUDIT_RETENTION_DAYS: String(config.auditRetentionDays),
      USAGE_EVENT_BUS: usageBus.eventBusArn,
    };
    for (const key of tableKeys) values[tableEnvVar(key)] = this.data.tables[key].tableName;
    const billingExports = new BillingExports(this, 'BillingExports');
    targets.billingExports = billingExports.bucket;
    values.BILLING_EXPORT_BUCKET = billingExports.bucket.bucketName;
    /** Exactly what the declaration calls for: the same derivation the wiring test builds each adapter with. */
    const environment = (access: FunctionAccess) => {
      const env: Record<string, string> = {};
      for (const name of environmentNames(access)) {
        const value = values[name];
        if (value === undefined) throw new Error(`No value for ${name}, which a declaration calls for`);
        env[name] = value;
      }
      return env;
    };
    const addFunction = (
      scope: Construct,
      id: string,
      entry: string,
      access: FunctionAccess,
      options: {
        async: boolean;
        timeout: Duration;
        env?: Record<string, string>;
        reservedConcurrency?: number;
        functionName?: string;
      },
    ) => {
      const fn = new ServiceFunction(scope, `Fn-${id}`, {
        entry,
        access,
        environment: { ...environment(access), ...options.env },
        logGroup: this.functionLogs,
        tables: this.data.tables,
        targets,
        timeout: options.timeout,
        reservedConcurrency: options.reservedConcurrency,
        functionName: options.functionName,
        // A sweep is redone every minute, so a failed or late one is dropped, not retried.
        ...(options.async
          ? {
              async:
                id === sweeperFunction.id
                  ? { onFailure: this.failureQueue, retryAttempts: 0, maxEventAge: Duration.minutes(1) }
                  : { onFailure: this.failureQueue, retryAttempts: 2, maxEventAge: Duration.hours(6) },
            }
          : {}),
      });
      this.functions.set(id, { fn, access, async: options.async });
      return fn;
    };

    const extra = (f: EventFunctionDef, timeout: Duration, env?: Record<string, string>, functionName?: string) =>
      addFunction(this, f.id, f.entry, f, { async: f.async, timeout, env, functionName });
    let bindingDeadline: BindingDeadline;
    {
      // Before the routes: the sandbox delete's grant and environment name it (as ECS events' and the sweeper's do).
      const snapshotsDelete = extra(sandboxSnapshotsDeleteFunction, Duration.seconds(60));
      targets.sandbox.snapshotsDeleteFunction = snapshotsDelete.fn;
      values.SNAPSHOTS_DELETE_FUNCTION = snapshotsDelete.fn.functionArn;
      // The warm pool's refill, which the starting routes, the ECS events and the sweeper invoke.
      const poolRefill = extra(poolRefillFunction, Duration.seconds(60));
      targets.sandbox.poolRefillFunction = poolRefill.fn;
      values.POOL_REFILL_FUNCTION = poolRefill.fn.functionArn;
      // A claim's 10 s binding deadline, which the starting routes set off (the sweeper is its target, below).
      bindingDeadline = new BindingDeadline(this, 'BindingDeadline', { seconds: BINDING_ACK_MS / 1000 });
      targets.sandbox.poolDeadlineArn = bindingDeadline.arn;
      values.POOL_DEADLINE_STATE_MACHINE = bindingDeadline.arn;
    }
    const stackNames = routeStackNames(table);
    const routeStack = (name: string) => {
      let nested = this.routeStacks.get(name);
      if (!nested) {
        nested = new NestedStack(this, name, { description: `Agent Conversation Service: route functions (${name})` });
        this.routeStacks.set(name, nested);
      }
      return nested;
    };
    for (const route of table) {
      const scope = routeStack(stackNames.get(route.id)!);
      addFunction(scope, route.id, route.entry, route, {
        async: false,
        timeout: routeTimeout(route),
        // A sandbox flood throttles ingest alone, when the operator reserves it (docs/deploy.md).
        reservedConcurrency: route.id === 'postEvents' ? config.ingestReservedConcurrency : undefined,
      });
    }
    // The authorizer accepts a session cookie only on requests from these origins (or the API's own).
    const authorizer = extra(authorizerFunction, Duration.seconds(10), {
      CORS_ORIGINS: config.corsAllowedOrigins.join(','),
    });
    const fallback = extra(fallbackFunction, Duration.seconds(5));
    this.bridgeSocket.connectWith(extra(bridgeSocketConnectFunction, Duration.seconds(10)).fn);
    {
      // The resend function first: $connect's grant and environment name it. It is named here, not by
      // CloudFormation, so its ARN is known before it exists: a replay longer than one invocation invokes
      // the function again (stream:resend), and its own ARN taken from the function would be a cycle.
      const resendName = functionNameOf(this.stackName, streamResendFunction.id);
      const resendArn = this.formatArn({
        service: 'lambda',
        resource: 'function',
        resourceName: resendName,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      });
      targets.stream.resendFunctionArn = resendArn;
      values.STREAM_RESEND_FUNCTION = resendArn;
      extra(streamResendFunction, Duration.seconds(60), undefined, resendName);
      // Like the authorizer: a session cookie opens a stream only from these origins (or the service's own).
      const connect = extra(streamConnectFunction, Duration.seconds(10), {
        CORS_ORIGINS: config.corsAllowedOrigins.join(','),
      });
      const disconnect = extra(streamDisconnectFunction, Duration.seconds(10));
      const message = extra(streamMessageFunction, Duration.seconds(29));
      this.stream.addRoutes({ connect: connect.fn, disconnect: disconnect.fn, message: message.fn });
    }

    this.api = new Api(this, 'Api', {
      config,
      authorizer: authorizer.fn,
      fallback: fallback.fn,
      accessLogs: new LogGroup(this, 'ApiAccessLogs', { retention, removalPolicy: RemovalPolicy.DESTROY }),
    });
    for (const route of table) {
      const { fn } = this.functions.get(route.id)!;
      this.api.addRoute(Stack.of(fn), route, fn.fn);
    }

    {
      const ecsEvents = extra(ecsEventsFunction, Duration.seconds(60));
      new Rule(this, 'SandboxTaskStopped', {
        // RUNNING too: ECS's timestamps give a cold start's PROVISIONING and PENDING (pull) phases.
        description: 'Sandbox tasks that started or stopped: their start phases, reconcile their records',
        eventPattern: {
          source: ['aws.ecs'],
          detailType: ['ECS Task State Change'],
          detail: { clusterArn: [this.sandboxes.cluster.clusterArn], lastStatus: ['STOPPED', 'RUNNING'] },
        },
        targets: [
          new LambdaFunction(ecsEvents.fn, {
            deadLetterQueue: this.failureQueue,
            retryAttempts: 8,
            maxEventAge: Duration.hours(2),
          }),
        ],
      });
    }
    {
      const sweeper = extra(sweeperFunction, Duration.seconds(60));
      bindingDeadline.invokes(sweeper.fn);
      new Schedule(this, 'SweeperSchedule', {
        description: 'Sweeper: sandbox start time-outs, idle sandboxes, orphan tasks, stalled conversation starts',
        schedule: ScheduleExpression.rate(Duration.minutes(1)),
        // Each run redoes the whole sweep, so a missed one is made up a minute later.
        target: new LambdaInvoke(sweeper.fn, {
          deadLetterQueue: this.failureQueue,
          retryAttempts: 0,
          maxEventAge: Duration.minutes(1),
        }),
      });
    }

    billingExports.scheduleDaily(extra(billingExportFunction, Duration.minutes(5)).fn, this.failureQueue);
    new UsageReconcileSchedule(this, 'UsageReconcile', {
      fn: extra(usageReconcileFunction, Duration.minutes(15)).fn,
      deadLetterQueue: this.failureQueue,
    });

    this.front = new PublicFront(this, 'Front', { httpApi: this.api.httpApi, socketHost: this.stream.host });
    // Links (conversation_url), the bridge URL, own origins and the cookie's Secure flag follow the one public host.
    for (const { fn } of this.functions.values()) fn.fn.addEnvironment('PUBLIC_BASE_URL', this.front.url);
    if (!config.oidcIssuer && config.cognito) {
      // The stack's own issuer (its callback is the public host): every function that reads sign-in settings verifies against it.
      this.signIn = new CognitoSignIn(this, 'SignIn', { config, publicUrl: this.front.url });
      for (const { fn, access } of this.functions.values())
        if (access.capabilities?.includes('signin')) {
          fn.fn.addEnvironment('OIDC_ISSUER', this.signIn.issuer);
          fn.fn.addEnvironment('OIDC_AUDIENCE', this.signIn.client.userPoolClientId);
          fn.fn.addEnvironment('OIDC_CLIENT_ID', this.signIn.client.userPoolClientId);
        }
    }
    // The LLM gateway (docs/platform-llms.md), only with platform models configured: a streaming function URL
    // under /llm/*. Made after the public host's variables are handed out: the distribution depends on it.
    if (config.platformLlms !== undefined)
      new LlmGatewayFront(this, 'LlmGateway', {
        fn: extra(llmGatewayRoute, Duration.minutes(15)).fn,
        distribution: this.front.distribution,
      });
    // The console's page redeems sign-in codes at the issuer's token endpoint (Cognito's is on its hosted
    // domain; an external issuer's may be on an origin of its own, oidcConnectOrigins): its CSP names those origins.
    const connect = [
      this.signIn ? this.signIn.domain.baseUrl() : config.oidcIssuer ? new URL(config.oidcIssuer).origin : '',
      ...config.oidcConnectOrigins,
    ]
      .filter(Boolean)
      .join(',');
    for (const id of ['console', 'consoleCallback'])
      this.functions.get(id)?.fn.fn.addEnvironment('OIDC_CONNECT_ORIGINS', connect);

    const alarmTopic = new Topic(this, 'Alarms', {
      displayName: 'Agent Conversation Service alarms',
      enforceSSL: true,
    });
    if (config.alarmEmail) alarmTopic.addSubscription(new EmailSubscription(config.alarmEmail));
    this.observability = new Observability(this, 'Observability', {
      functionLogs: this.functionLogs,
      api: this.api.httpApi,
      failureQueue: this.failureQueue,
      alarmTopic,
    });

    new CfnOutput(this, 'PublicUrl', {
      value: this.front.url,
      description: 'Base URL of the service (CloudFront: the API and the event stream on one host)',
    });
    new CfnOutput(this, 'ApiUrl', {
      value: this.api.url,
      description: 'The HTTP API behind CloudFront (its own execute-api host)',
    });
    new CfnOutput(this, 'BridgeSocketUrl', {
      value: this.bridgeSocket.url,
      description: 'The WebSocket sandbox programs take their commands from',
    });
    new CfnOutput(this, 'StreamApiUrl', {
      value: this.stream.stage.url,
      description: 'The WebSocket API behind CloudFront: connect with ?channel=events&id=<conversation id>',
    });
    for (const key of tableKeys) {
      new CfnOutput(this, `${key[0]!.toUpperCase()}${key.slice(1)}TableName`, {
        value: this.data.tables[key].tableName,
      });
    }
    new CfnOutput(this, 'ClusterArn', {
      value: this.sandboxes.cluster.clusterArn,
      description: 'ECS cluster of the sandboxes',
    });
    new CfnOutput(this, 'WorkspaceBucketName', {
      value: this.sandboxes.workspaces.bucketName,
      description: 'S3 bucket of workspace snapshots (retained)',
    });
    new CfnOutput(this, 'SandboxImageCompressedBytes', {
      value: new ImageSize(this, 'SandboxImageSize', { image: this.sandboxes.image, logGroup: this.functionLogs })
        .bytes,
      description:
        'The sandbox image as ECR stores it (compressed layers), read at deploy time: zstd under 250 MB, else a SOCI index',
    });
    new CfnOutput(this, 'SecretsKeyId', { value: this.secretsKey.keyId, description: 'KMS key that seals secrets' });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: alarmTopic.topicArn,
      description: 'Subscribe to receive the alarms',
    });
    new CfnOutput(this, 'FailedInvocationsQueueUrl', {
      value: this.failureQueue.queueUrl,
      description: 'Events that failed after their retries',
    });

    acknowledgeFindings(this);
  }
}

/** Builds the deployment into `app` from its context, with the cdk-nag packs as synth-time validations. */
export function buildApp(app: App, extraRoutes: readonly RouteDef[] = []): ConversationServiceStack {
  const config = loadConfig((key) => app.node.tryGetContext(key));
  const env = config.account || config.region ? { account: config.account, region: config.region } : undefined;
  const stack = new ConversationServiceStack(app, config.stackName, {
    config,
    ...(extraRoutes.length ? { routes: [...(routes as readonly RouteDef[]), ...extraRoutes] } : {}),
    ...(env ? { env } : {}),
    description: 'Agent Conversation Service: serverless control plane with Fargate sandboxes',
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  return stack;
}
