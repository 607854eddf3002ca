import { CfnElement, Names, NestedStack, Stack, Validations } from 'aws-cdk-lib';
import type { CfnRoute } from 'aws-cdk-lib/aws-apigatewayv2';
import type { CfnPolicy } from 'aws-cdk-lib/aws-iam';
// The function cdk-nag itself uses to name a wildcard finding, so the ids below match its own.
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';
import { wildcardReason } from '#infra/iam.ts';
import type { ConversationServiceStack } from '#infra/stack.ts';

/** Wildcards that AWS services impose outside our capability map. */
const serviceWildcards: Record<string, string> = {
  'xray:PutTraceSegments': 'Active tracing: X-Ray trace writes accept no resource ARN.',
  'xray:PutTelemetryRecords': 'Active tracing: X-Ray trace writes accept no resource ARN.',
  'lambda:InvokeFunction':
    'EventBridge Scheduler invokes the sweeper: that one function, by its ARN and its qualified (`:*` version) ARNs.',
  'ecr:GetAuthorizationToken':
    'ECR login accepts no resource ARN; image pulls are limited to the sandbox image repository.',
};

const ack = (scope: IConstruct, id: string, reason: string) => Validations.of(scope).acknowledge({ id, reason });

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

/**
 * Acknowledges each `AwsSolutions-IAM5` wildcard finding of a policy with the reason its grant
 * gives. A wildcard without a recorded reason stays unacknowledged and fails the synth.
 */
function acknowledgeWildcards(policy: CfnPolicy): void {
  const stack = Stack.of(policy);
  const doc = asInTemplate(stack, stack.resolve(policy.policyDocument)) as { Statement: Statement[] };
  for (const statement of doc.Statement) {
    if (statement.Effect !== 'Allow') continue;
    const actions = [statement.Action].flat();
    const reason = actions.map((a) => wildcardReason(a) ?? serviceWildcards[a]).find(Boolean);
    if (!reason) continue;
    for (const resource of [statement.Resource].flat()) {
      const flat = flattenCfnReference(stack.resolve(resource));
      if (flat.includes('*')) ack(policy, `AwsSolutions-IAM5[Resource::${flat}]`, reason);
    }
  }
}

const parentElements = new WeakMap<Stack, Map<string, CfnElement>>();

/**
 * A resolved value as the template of `stack` will hold it. In a nested stack, a reference to its parent's
 * resource becomes a parameter, named as CDK names it (`reference-to-<unique id><Ref|attribute>`, which
 * CDK's logical id keeps without the dashes): cdk-nag names a finding by that parameter.
 */
function asInTemplate(stack: Stack, value: unknown): unknown {
  if (!NestedStack.isNestedStack(stack)) return value;
  const parent = stack.nestedStackParent!;
  let elements = parentElements.get(parent);
  if (!elements) {
    elements = new Map();
    for (const c of parent.node.findAll())
      if (CfnElement.isCfnElement(c) && Stack.of(c) === parent) elements.set(parent.getLogicalId(c), c);
    parentElements.set(parent, elements);
  }
  const param = (id: string, name: string) => {
    const element = elements!.get(id);
    return element ? { Ref: `referenceto${Names.nodeUniqueId(element.node)}${name}` } : undefined;
  };
  const walk = (v: any): any => {
    if (Array.isArray(v)) return v.map(walk);
    if (!v || typeof v !== 'object') return v;
    if (typeof v.Ref === 'string' && Object.keys(v).length === 1) return param(v.Ref, 'Ref') ?? v;
    if (Array.isArray(v['Fn::GetAtt']) && Object.keys(v).length === 1)
      return param(v['Fn::GetAtt'][0], v['Fn::GetAtt'][1]) ?? v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
  };
  return walk(value);
}

/** The stack's cdk-nag acknowledgements: each on the one construct it concerns, each with its reason. */
export function acknowledgeFindings(stack: ConversationServiceStack): void {
  for (const { fn, async } of stack.functions.values()) {
    acknowledgeWildcards(fn.role.node.findChild('DefaultPolicy').node.defaultChild as CfnPolicy);
    ack(
      fn.fn,
      'Serverless-LambdaDLQ',
      async
        ? 'Asynchronous: an SQS on-failure destination (FailedInvocations) receives failed events with the error, which a DLQ would not carry.'
        : 'Invoked synchronously (API Gateway): a failure returns to the caller; a DLQ only ever receives asynchronous invocations.',
    );
  }
  acknowledgeWildcards(stack.sandboxes.executionRole.node.findChild('DefaultPolicy').node.defaultChild as CfnPolicy);
  // The role CDK's Scheduler target makes for the sweeper schedule (a child of the stack).
  for (const child of stack.node.children) {
    if (child.node.id.startsWith('SchedulerRoleForTarget'))
      acknowledgeWildcards(child.node.findChild('DefaultPolicy').node.defaultChild as CfnPolicy);
  }

  for (const route of stack.routeTable) {
    if (route.auth === 'user') continue;
    ack(
      stack.api.routes.get(route.id)!.node.defaultChild as CfnRoute,
      'AwsSolutions-APIG4',
      route.auth === 'none'
        ? `Public by design (${route.summary}); it reads no user data.`
        : 'Sandbox bridge route: the handler authenticates the sandbox by its own per-sandbox key, which the API-key authorizer does not know.',
    );
  }
  ack(
    stack.api.httpApi.node.findChild('DefaultRoute'),
    'AwsSolutions-APIG4',
    'The $default route only answers 404/405 for paths and methods no route matches; it touches no data.',
  );

  if (stack.signIn) {
    const pool = stack.signIn.pool.node.defaultChild as IConstruct;
    ack(
      pool,
      'AwsSolutions-COG2',
      'MFA is optional (TOTP), each person turns it on: requiring it would refuse every federated person whose own issuer already enforces it.',
    );
    ack(
      pool,
      'AwsSolutions-COG8',
      "The Essentials tier: the Plus tier's threat protection is billed per monthly active user at several times the price (docs/cost.md); an operator may switch it on.",
    );
  }

  const socket = stack.bridgeSocket;
  ack(
    socket.api.node.findChild('$connect-Route').node.defaultChild as CfnRoute,
    'AwsSolutions-APIG4',
    "Bridge socket $connect: the function authenticates the sandbox program by its own per-sandbox key (as the bridge's HTTP routes do) and refuses anything else.",
  );
  ack(
    socket.node.findChild('DefaultRoute'),
    'AwsSolutions-APIG4',
    'A MOCK integration that answers every message with a pong: it reaches no function, no data and no other connection.',
  );
  const socketLogs =
    'WebSocket stage access logs need the account-wide API Gateway CloudWatch role (a setting outside this stack); each connection is logged by the $connect function (sandbox.socket) and messages are only pings a MOCK answers.';
  ack(socket.stage, 'AwsSolutions-APIG1', socketLogs);
  ack(socket.stage, 'Serverless-APIGWAccessLogging', socketLogs);
  for (const { taskDefinition } of stack.sandboxes.taskDefinitions) {
    ack(
      taskDefinition,
      'AwsSolutions-ECS2',
      'The one variable in the task definition is BRIDGE_SOCKET_URL, a public endpoint; per-sandbox values and secrets come at RunTask and through the bridge.',
    );
  }
  const socketRoutes: Record<string, string> = {
    $connect:
      'The stream authorizes in its $connect handler (shared/stream/access.ts: a single-use ticket, the conversation-scoped key, or the session cookie with an allowed Origin; a user key in the URL refused), which also answers the refusal status.',
    $disconnect: "Runs only for a connection $connect accepted; it removes that connection's record.",
    $default:
      "Messages of a connection $connect accepted, relayed for that connection's conversation only (its record names it).",
    ping: 'Keep-alive messages of a connection $connect accepted, consumed by a mock integration; nothing is read or stored.',
  };
  for (const [key, reason] of Object.entries(socketRoutes))
    ack(stack.stream.routes.get(key)!.node.defaultChild as CfnRoute, 'AwsSolutions-APIG4', reason);
  const distribution = stack.front.distribution;
  ack(
    distribution,
    'AwsSolutions-CFR1',
    'A public API for its users wherever they are; access is decided per request by keys, sessions and tickets.',
  );
  ack(
    distribution,
    'AwsSolutions-CFR2',
    'AWS WAF bills every web ACL monthly, a fixed cost the service avoids (principle 3); both APIs are throttled per stage and authorize every request.',
  );
  ack(
    distribution,
    'AwsSolutions-CFR3',
    'Every request reaches an API whose access log records it (ApiAccessLogs, StreamAccessLogs); CloudFront standard logs would bill a second store for the same lines.',
  );
  ack(
    distribution,
    'AwsSolutions-CFR4',
    'The default *.cloudfront.net certificate, whose TLS policy CloudFront sets; a custom domain (own certificate) is where a minimum TLS version is chosen.',
  );

  const queueReason =
    'This queue is itself the failure destination of the asynchronous functions and targets; nothing would feed a queue behind it.';
  ack(stack.failureQueue, 'AwsSolutions-SQS3', queueReason);
  ack(stack.failureQueue, 'Serverless-SQSRedrivePolicy', queueReason);
  ack(
    stack.sandboxes.workspaces,
    'AwsSolutions-S1',
    'Workspace snapshots are written and read only through short-lived URLs the control plane presigns per sandbox (logged by the bridge functions); server access logs would bill a second bucket for the same record.',
  );
  ack(
    stack.sandboxes.cluster,
    'AwsSolutions-ECS4',
    'Container Insights bills custom metrics per task and cluster; sandbox health comes from the sandbox.* log metrics and ECS events instead (zero fixed cost).',
  );
}
