import { ArnFormat, type Stack } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { ICluster } from 'aws-cdk-lib/aws-ecs';
import { PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Capability, RouteDef, TableAccess } from '#shared/http/route.ts';
import { tables as tableDefs, type TableKey } from '#shared/store/tables.ts';
import { BILLING_EXPORT_PREFIX } from '#shared/billing/export.ts';

/**
 * THE map from what a function declares (its route-table `tables` and `capabilities`) to IAM.
 * The stack grants from it and nothing else; the infra tests compare every function's synthesized
 * policy with `expectedActions`, so a grant added anywhere else fails them.
 */

/** What a function may touch: a route-table entry, or one of the extra functions in infra/functions.ts. */
export type FunctionAccess = Pick<RouteDef, 'tables' | 'capabilities'>;

const READ = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'] as const;

/**
 * Table access to DynamoDB actions, on the table and its indexes. No Scan, no transactions. `append`
 * is PutItem alone (the audit log: its adapter conditions every put on `attribute_not_exists`, so
 * an entry is never overwritten; IAM cannot see a condition expression, test/infra checks both).
 */
export const tableActions = {
  read: READ,
  write: [...READ, 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'],
  append: ['dynamodb:PutItem'],
} as const satisfies Record<TableAccess, readonly string[]>;

/** The resources the capabilities are granted on; the sandbox ones exist once the stack has built them. */
export interface GrantTargets {
  secretsKey: IKey;
  sandbox: {
    cluster: ICluster;
    /** Every sandbox task-definition family (the specs' and those of users' images) starts with this. */
    familyPrefix: string;
    /** The sandbox task and execution roles: the only roles a function may pass. */
    roles: IRole[];
    /** Workspace snapshots, one prefix per sandbox under `sandboxes/`. */
    workspaces: IBucket;
    /** The function that removes a deleted sandbox's snapshots (set once it exists). */
    snapshotsDeleteFunction?: IFunction;
    /** The warm pool's refill function (set once it exists). */
    poolRefillFunction?: IFunction;
    /** The warm pool's binding-deadline state machine's ARN (set once it exists). */
    poolDeadlineArn?: string;
  };
  /** The bridge socket (infra/constructs/bridge-socket.ts): the ARN of posting to its connections. */
  bridgeSocket: { connectionsArn: string };
  /** The platform models' upstream key ARNs (SSM parameters, Secrets Manager secrets) from the context `platformLlms`. */
  platformLlmKeys?: string[];
  /** The events table's index of counters that grew (Scanned by the sweeper alone). */
  grownBytesIndexArn: string;
  /** The Stripe secret key's ARN (the context `stripe`); unset: no Stripe. */
  stripeKeyArn?: string;
  /** The operator's bucket of billing exports (infra/constructs/billing-exports.ts; set once it exists). */
  billingExports?: IBucket;
  /** The event stream's WebSocket API (its stage's @connections) and the ARN of the function that resends after $connect (set once it is named). */
  stream: { apiId: string; stageName: string; resendFunctionArn?: string };
  /** The operator's EventBridge bus for usage notices (infra/constructs/usage-bus.ts). */
  usageBus?: IEventBus;
}

interface Grant {
  actions: readonly string[];
  resources: (t: GrantTargets, stack: Stack) => string[];
  conditions?: (t: GrantTargets) => Record<string, Record<string, unknown>>;
  /** Why a resource here holds a `*`: the cdk-nag acknowledgement of that finding (infra/nag.ts). */
  wildcard?: string;
}

const inCluster = (t: GrantTargets) => ({ ArnEquals: { 'ecs:cluster': t.sandbox.cluster.clusterArn } });
const ecsArn = (stack: Stack, resource: string, resourceName: string) =>
  stack.formatArn({ service: 'ecs', resource, resourceName, arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
const clusterTasks = (t: GrantTargets, stack: Stack) => [ecsArn(stack, 'task', `${t.sandbox.cluster.clusterName}/*`)];
const sandboxFamilies = (t: GrantTargets, stack: Stack) => [
  ecsArn(stack, 'task-definition', `${t.sandbox.familyPrefix}*:*`),
];
const passSandboxRoles: Grant = {
  actions: ['iam:PassRole'],
  resources: (t) => t.sandbox.roles.map((r) => r.roleArn),
  conditions: () => ({ StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } }),
};

/** The @connections of the stream's stage, as execute-api names them: `<api>/<stage>/<verb>/@connections/<id>`; POST sends, GET reads a connection's state, DELETE drops a connection (a failed first-message auth, a suspension). */
const streamConnections = (t: GrantTargets, stack: Stack, verbs = ['POST', 'GET', 'DELETE']) =>
  verbs.map((verb) =>
    stack.formatArn({
      service: 'execute-api',
      resource: t.stream.apiId,
      resourceName: `${t.stream.stageName}/${verb}/@connections/*`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    }),
  );
const resendFunction = (t: GrantTargets) => {
  if (!t.stream.resendFunctionArn)
    throw new Error('The stream resend function must be named before a function that invokes it');
  return [t.stream.resendFunctionArn];
};
const snapshotsDeleteFunction = (t: GrantTargets) => {
  if (!t.sandbox.snapshotsDeleteFunction)
    throw new Error('The snapshot-removal function must exist before a function that invokes it');
  return [t.sandbox.snapshotsDeleteFunction.functionArn];
};
const poolRefillFunction = (t: GrantTargets) => {
  if (!t.sandbox.poolRefillFunction)
    throw new Error('The pool refill function must exist before a function that invokes it');
  return [t.sandbox.poolRefillFunction.functionArn];
};
const poolDeadline = (t: GrantTargets) => {
  if (!t.sandbox.poolDeadlineArn)
    throw new Error('The binding-deadline state machine must exist before a function that starts it');
  return [t.sandbox.poolDeadlineArn];
};
const usageBus = (t: GrantTargets) => {
  if (!t.usageBus) throw new Error('The usage bus must exist before a function that sends to it');
  return [t.usageBus.eventBusArn];
};
/** Each capability's statements. Keep in step with the `Capability` comments in shared/http/route.ts. */
export const capabilityGrants: Record<Capability, readonly Grant[]> = {
  seal: [{ actions: ['kms:Encrypt'], resources: (t) => [t.secretsKey.keyArn] }],
  unseal: [{ actions: ['kms:Decrypt'], resources: (t) => [t.secretsKey.keyArn] }],
  // The specs come in the environment (SANDBOX_SPECS): nothing to call.
  specs: [],
  // CORS_ORIGINS and PLANS come in the environment too.
  origins: [],
  plans: [],
  prices: [],
  'platform-llms': [],
  'platform-llm-keys': [
    {
      // The upstream keys by ARN only: SSM SecureStrings under the AWS-managed key aws/ssm (no kms grant needed) or Secrets Manager secrets.
      actions: ['ssm:GetParameter', 'secretsmanager:GetSecretValue'],
      resources: (t) => {
        if (!t.platformLlmKeys?.length) throw new Error('platform-llm-keys: no key ARNs in the platformLlms context');
        return t.platformLlmKeys;
      },
    },
  ],
  signin: [],
  'ecs:run': [
    {
      actions: ['ecs:RunTask'],
      resources: sandboxFamilies,
      conditions: inCluster,
      wildcard:
        "Task definitions of users' images are registered at run time: any revision of a family under this stack's sandbox prefix, in the sandbox cluster only.",
    },
    {
      // RunTask with tags (startedBy is not a tag; `tags` are) needs TagResource on the new task.
      actions: ['ecs:TagResource'],
      resources: clusterTasks,
      conditions: () => ({ StringEquals: { 'ecs:CreateAction': 'RunTask' } }),
      wildcard:
        'Tags a task while RunTask creates it; task ids are not known in advance, the ARN is limited to the sandbox cluster.',
    },
    passSandboxRoles,
  ],
  'ecs:stop': [
    {
      actions: ['ecs:StopTask'],
      resources: clusterTasks,
      conditions: inCluster,
      wildcard: 'Sandbox task ids are not known in advance; the ARN is limited to tasks of the sandbox cluster.',
    },
  ],
  'ecs:describe': [
    {
      actions: ['ecs:DescribeTasks'],
      resources: clusterTasks,
      conditions: inCluster,
      wildcard: 'Sandbox task ids are not known in advance; the ARN is limited to tasks of the sandbox cluster.',
    },
    {
      actions: ['ecs:ListTasks'],
      resources: () => ['*'],
      conditions: inCluster,
      wildcard: 'ListTasks takes no task resource; the ecs:cluster condition limits it to the sandbox cluster.',
    },
  ],
  'ecs:task-definitions': [
    // Register/DescribeTaskDefinition take no resource-level permissions in IAM. Describe reads a
    // spec's definition (to copy it for a user's image) and finds an image's definition by family.
    {
      actions: ['ecs:RegisterTaskDefinition', 'ecs:DescribeTaskDefinition'],
      resources: () => ['*'],
      wildcard: 'ECS task-definition registration and description accept no resource ARN in IAM.',
    },
    passSandboxRoles,
  ],
  // Posting to the bridge socket's connections only: no other API, no other stage, no GET/DELETE of connections.
  'commands:push': [
    {
      actions: ['execute-api:ManageConnections'],
      resources: (t) => [t.bridgeSocket.connectionsArn],
      wildcard:
        "Connection ids are made by API Gateway at run time; the ARN is limited to POST on the bridge socket stage's @connections.",
    },
  ],
  's3:workspaces': [
    {
      // What the presigned requests do (S3 evaluates them against the signing role), and deletion.
      actions: ['s3:PutObject', 's3:GetObject', 's3:DeleteObject'],
      resources: (t) => [t.sandbox.workspaces.arnForObjects('sandboxes/*')],
      wildcard:
        'Snapshot keys are made per snapshot at run time; the ARN is limited to the sandboxes/ prefix of the workspace bucket.',
    },
    {
      actions: ['s3:ListBucket'],
      resources: (t) => [t.sandbox.workspaces.bucketArn],
      conditions: () => ({ StringLike: { 's3:prefix': ['sandboxes/*'] } }),
    },
  ],
  // Reading a paused sandbox's snapshot (its workspace reads): nothing else of the bucket.
  's3:workspaces:read': [
    {
      actions: ['s3:GetObject'],
      resources: (t) => [t.sandbox.workspaces.arnForObjects('sandboxes/*')],
      wildcard:
        'Snapshot keys are made per snapshot at run time; the ARN is limited to the sandboxes/ prefix of the workspace bucket.',
    },
  ],
  'stream:push': [
    {
      actions: ['execute-api:ManageConnections'],
      resources: streamConnections,
      wildcard:
        "Connection ids are made by API Gateway at run time; the ARNs are limited to POST (PostToConnection), GET (GetConnection) and DELETE (DeleteConnection) on the @connections of the stream API's stage.",
    },
  ],
  'stream:close': [
    {
      actions: ['execute-api:ManageConnections'],
      resources: (t, stack) => streamConnections(t, stack, ['DELETE']),
      wildcard:
        "Connection ids are made by API Gateway at run time; the ARN is limited to DELETE (DeleteConnection) on the @connections of the stream API's stage.",
    },
  ],
  'stream:resend': [{ actions: ['lambda:InvokeFunction'], resources: resendFunction }],
  // Table access grants no Scan; this one index holds only the counters that grew since the last sum.
  'events:grown-bytes': [{ actions: ['dynamodb:Scan'], resources: (t) => [t.grownBytesIndexArn] }],
  stripe: [
    {
      // The key by ARN only. Without Stripe configured, a parameter name that exists nowhere: the grant is inert.
      actions: ['ssm:GetParameter', 'secretsmanager:GetSecretValue'],
      resources: (t, stack) => [
        t.stripeKeyArn ??
          stack.formatArn({ service: 'ssm', resource: 'parameter', resourceName: 'acs/stripe-not-configured' }),
      ],
    },
  ],
  'billing:export': [
    {
      // Writes only: a run replaces its period's object; nothing of the bucket is read, listed or deleted.
      actions: ['s3:PutObject'],
      resources: (t) => {
        if (!t.billingExports)
          throw new Error('The billing-export bucket must exist before a function that writes to it');
        return [t.billingExports.arnForObjects(`${BILLING_EXPORT_PREFIX}*`)];
      },
      wildcard:
        "Export keys are made per period at run time; the ARN is limited to the export bucket's focus-1.2/ prefix.",
    },
  ],
  // The operator's usage bus only (infra/constructs/usage-bus.ts), not the account's default bus.
  'usage:notify': [{ actions: ['events:PutEvents'], resources: usageBus }],
  'snapshots:delete': [{ actions: ['lambda:InvokeFunction'], resources: snapshotsDeleteFunction }],
  'pool:refill': [
    { actions: ['lambda:InvokeFunction'], resources: poolRefillFunction },
    {
      // A claimed standby's task is tagged with its sandbox (what list() and operators read); it is already
      // running. TagResource knows no ecs:cluster key: only tasks RunTask tagged as standbys (pool-standby).
      actions: ['ecs:TagResource'],
      resources: clusterTasks,
      conditions: () => ({ Null: { 'aws:ResourceTag/pool-standby': 'false' } }),
      wildcard: 'Standby task ids are not known in advance; the ARN is limited to tasks of the sandbox cluster.',
    },
  ],
  // That state machine only (infra/constructs/binding-deadline.ts): each claim starts one execution.
  'pool:deadline': [{ actions: ['states:StartExecution'], resources: poolDeadline }],
};

/** Why a statement's resource holds a `*`, by action; the acknowledgements in infra/nag.ts read this. */
export function wildcardReason(action: string): string | undefined {
  for (const grants of Object.values(capabilityGrants))
    for (const g of grants) if (g.wildcard && g.actions.includes(action)) return g.wildcard;
  return undefined;
}

/** Every function writes to its log group; active tracing makes CDK add the X-Ray writes. */
export const logActions = ['logs:CreateLogStream', 'logs:PutLogEvents'] as const;
export const tracingActions = ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'] as const;
/** An asynchronous function's on-failure destination (the Lambda service sends with the function's role). */
export const onFailureActions = ['sqs:SendMessage'] as const;

/** The IAM actions a function's declaration calls for, beyond logging and tracing. */
export function accessActions(access: FunctionAccess): Set<string> {
  const out = new Set<string>();
  for (const level of Object.values(access.tables)) for (const a of tableActions[level!]) out.add(a);
  for (const cap of access.capabilities ?? [])
    for (const grant of capabilityGrants[cap]) for (const a of grant.actions) out.add(a);
  return out;
}

/** Everything a function's role must allow, exactly. */
export function expectedActions(access: FunctionAccess, options: { async: boolean }): Set<string> {
  return new Set([
    ...logActions,
    ...tracingActions,
    ...accessActions(access),
    ...(options.async ? onFailureActions : []),
  ]);
}

/** The policy statements for a declaration, on the deployed tables and sandbox resources. */
export function accessStatements(
  stack: Stack,
  access: FunctionAccess,
  tables: Record<TableKey, ITableV2>,
  targets: GrantTargets,
): PolicyStatement[] {
  const statements: PolicyStatement[] = [];
  for (const [key, level] of Object.entries(access.tables) as [TableKey, TableAccess][]) {
    const table = tables[key];
    // The declared indexes by name, so a policy never names an index the design does not have.
    const indexes = Object.keys(tableDefs[key].indexes).map((name) => `${table.tableArn}/index/${name}`);
    statements.push(
      new PolicyStatement({
        actions: [...tableActions[level]],
        // An append reads nothing, so it needs no index.
        resources: level === 'append' ? [table.tableArn] : [table.tableArn, ...indexes],
      }),
    );
  }
  for (const cap of access.capabilities ?? []) {
    for (const grant of capabilityGrants[cap]) {
      statements.push(
        new PolicyStatement({
          actions: [...grant.actions],
          resources: grant.resources(targets, stack),
          conditions: grant.conditions?.(targets),
        }),
      );
    }
  }
  return statements;
}
