import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedActions } from '#infra/iam.ts';
import { ecsEventsFunction, entryExists, sweeperFunction } from '#infra/functions.ts';
import { BRIDGE_SOCKET_PONG } from '#infra/constructs/bridge-socket.ts';
import { bridgeSocketConnectFunction } from '#shared/functions.ts';
import { buildApp, type ConversationServiceStack, functionNameOf, routeTimeout } from '#infra/stack.ts';
import { MAX_ROUTE_TIMEOUT_SECONDS, ROUTE_TIMEOUT_SECONDS, type RouteDef } from '#shared/http/route.ts';
import { CORS_ALLOW_HEADERS } from '#shared/http/cors.ts';
import { routes } from '#shared/routes.ts';
import { tableKeys, tables } from '#shared/store/tables.ts';
import { environmentNames, sandboxRuntimeEnv } from '#shared/wiring/needs.ts';
import { flattenNested, type Template as TierTemplate } from '#test/tier/template.ts';
import { hourlyBilled } from './zero-cost.ts';

const cdkContext = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')).context as Record<
  string,
  unknown
>;
const routeDefs = routes as readonly RouteDef[];
const SANDBOX_ENV = [...sandboxRuntimeEnv, 'SANDBOX_SPECS'];

type Json = Record<string, any>;

// One synthesis for the whole file.
let outdir: string;
let stack: ConversationServiceStack;
let template: Template;
let resources: Record<string, Json>;
let synthError: unknown;

/** The element's logical id in its own stack (the flattened template keeps nested stacks' ids). */
const logicalId = (element: unknown) => Stack.of(element as CfnElement).getLogicalId(element as CfnElement);
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
/** Resources of one API Gateway API (the HTTP API, the bridge socket). */
const ofApi = (type: string, api: unknown) =>
  ofType(type).filter(([, r]) => r.Properties.ApiId?.Ref === logicalId(api));

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'acs-cdk-'));
  // Not bundled: the template is what this file asserts. The bundles are checked by test/infra/bundles.test.ts,
  // and run from the pre-test synthesis in test/tier/ (the files the docs' and console's functions carry too).
  const app = new App({
    context: { ...cdkContext, 'aws:cdk:enable-asset-metadata': true, 'aws:cdk:bundling-stacks': [] },
    outdir,
  });
  stack = buildApp(app);
  try {
    const assembly = app.synth();
    // The nested stacks' resources in one template, as the tier reads the deployment.
    const read = (file: string) => JSON.parse(readFileSync(join(outdir, file), 'utf8'));
    template = Template.fromJSON(
      flattenNested(assembly.getStackByName(stack.stackName).template as TierTemplate, read) as Json,
    );
  } catch (err) {
    synthError = err;
    throw err;
  }
  resources = template.toJSON().Resources as Record<string, Json>;
}, 120_000);

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('cdk-nag (AwsSolutions and Serverless packs)', () => {
  it('synthesizes with zero unacknowledged findings', () => {
    expect(synthError).toBeUndefined();
  });

  it('acknowledges each finding on its own construct, by its full id, with a reason', () => {
    const acks: { path: string; id: string; reason: string }[] = [];
    for (const node of stack.node.findAll()) {
      for (const entry of node.node.metadata) {
        if (!entry.data || typeof entry.data !== 'object') continue;
        for (const [key, value] of Object.entries(entry.data as Record<string, unknown>)) {
          // Only cdk-nag's: CDK records some of its own (CloudFormation-Validate::...).
          const id = key.replace(/^annotation::/i, '');
          if (!/^(AwsSolutions|Serverless)-/.test(id)) continue;
          acks.push({ path: node.node.path, id, reason: String(value) });
        }
      }
    }
    expect(acks.length).toBeGreaterThan(0);
    for (const a of acks) {
      expect(a.path, `${a.id} acknowledged on the whole stack`).not.toBe(stack.node.path);
      expect(a.id, `${a.path}: acknowledge the specific finding`).not.toMatch(/IAM5$/);
      expect(a.reason.length, `${a.path} ${a.id}: reason`).toBeGreaterThan(30);
    }
  });

  it('is live: an unacknowledged finding fails the synth', () => {
    const app = new App({ context: { ...cdkContext, 'aws:cdk:bundling-stacks': [] } });
    const s = buildApp(app);
    new Queue(s, 'PlainQueue'); // no SSL enforcement, no DLQ: AwsSolutions-SQS3/SQS4
    expect(() => app.synth()).toThrow(/PlainQueue/);
  });
});

describe('zero fixed cost', () => {
  it('has nothing billed by the hour while nobody uses the service', () => {
    expect(hourlyBilled(template.toJSON())).toEqual([]);
  });

  it('catches each kind of hourly-billed resource', () => {
    const bad = {
      Resources: {
        Nat: { Type: 'AWS::EC2::NatGateway' },
        Alb: { Type: 'AWS::ElasticLoadBalancingV2::LoadBalancer' },
        Endpoint: { Type: 'AWS::EC2::VPCEndpoint', Properties: { VpcEndpointType: 'Interface' } },
        Db: { Type: 'AWS::RDS::DBCluster' },
        Cache: { Type: 'AWS::ElastiCache::CacheCluster' },
        Search: { Type: 'AWS::OpenSearchService::Domain' },
        Box: { Type: 'AWS::EC2::Instance' },
        Service: { Type: 'AWS::ECS::Service', Properties: {} },
        Warm: {
          Type: 'AWS::Lambda::Alias',
          Properties: { ProvisionedConcurrencyConfig: { ProvisionedConcurrentExecutions: 1 } },
        },
        Ip: { Type: 'AWS::EC2::EIP' },
        Fine: { Type: 'AWS::EC2::VPCEndpoint', Properties: {} },
        IdleService: { Type: 'AWS::ECS::Service', Properties: { DesiredCount: 0 } },
      },
    };
    expect(hourlyBilled(bad).map((line) => line.split(':')[0])).toEqual([
      'Nat',
      'Alb',
      'Endpoint',
      'Db',
      'Cache',
      'Search',
      'Box',
      'Service',
      'Warm',
      'Ip',
    ]);
  });
});

describe('tables', () => {
  it('makes one on-demand table per declared table, with PITR, retained, indexes as declared', () => {
    const made = ofType('AWS::DynamoDB::GlobalTable');
    expect(made).toHaveLength(tableKeys.length);
    for (const key of tableKeys) {
      const [, r] = made.find(([id]) => id === logicalId(stack.data.tables[key].node.defaultChild))!;
      expect(r.DeletionPolicy).toBe('Retain');
      expect(r.UpdateReplacePolicy).toBe('Retain');
      expect(r.Properties.BillingMode).toBe('PAY_PER_REQUEST');
      expect(r.Properties.Replicas[0].PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      const def = tables[key] as { pk: string; sk?: string; indexes: Record<string, { pk: string; sk?: string }> };
      expect(r.Properties.KeySchema.map((k: Json) => k.AttributeName)).toEqual([def.pk, ...(def.sk ? [def.sk] : [])]);
      const indexes = Object.fromEntries(
        (r.Properties.GlobalSecondaryIndexes ?? []).map((i: Json) => [
          i.IndexName,
          i.KeySchema.map((k: Json) => k.AttributeName),
        ]),
      );
      expect(indexes).toEqual(
        Object.fromEntries(Object.entries(def.indexes).map(([n, i]) => [n, [i.pk, ...(i.sk ? [i.sk] : [])]])),
      );
      const ttl = (tables[key] as { ttl?: string }).ttl;
      expect(r.Properties.TimeToLiveSpecification, key).toEqual(
        ttl ? { AttributeName: ttl, Enabled: true } : undefined,
      );
    }
  });
});

describe('HTTP API', () => {
  it('has one route per route-table entry, with the authorizer exactly on user routes, and a $default fallback', () => {
    const httpApi = { Ref: logicalId(stack.api.httpApi.node.defaultChild) };
    const made = ofType('AWS::ApiGatewayV2::Route')
      .map(([, r]) => r.Properties)
      .filter((r) => JSON.stringify(r.ApiId) === JSON.stringify(httpApi));
    expect(made.map((r) => r.RouteKey).sort()).toEqual(
      [...routeDefs.map((r) => `${r.method} ${r.path}`), '$default'].sort(),
    );
    for (const route of routeDefs) {
      const r = made.find((m) => m.RouteKey === `${route.method} ${route.path}`)!;
      if (route.auth === 'user')
        expect(r, route.id).toMatchObject({ AuthorizationType: 'CUSTOM', AuthorizerId: expect.anything() });
      else expect(r.AuthorizationType ?? 'NONE', route.id).toBe('NONE');
      // each route reaches its own function
      const target = JSON.stringify(resources[r.Target['Fn::Join'][1][1].Ref]!.Properties.IntegrationUri);
      expect(target).toContain(logicalId(stack.functions.get(route.id)!.fn.fn.node.defaultChild));
    }
    const fallback = made.find((m) => m.RouteKey === '$default')!;
    expect(fallback.AuthorizationType ?? 'NONE').toBe('NONE');
  });

  it('runs the REQUEST authorizer on every user request: no identity source, no cache, simple responses', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 1);
    const [, authorizer] = ofType('AWS::ApiGatewayV2::Authorizer')[0]!;
    expect(authorizer.Properties).toMatchObject({
      AuthorizerType: 'REQUEST',
      AuthorizerPayloadFormatVersion: '2.0',
      EnableSimpleResponses: true,
      AuthorizerResultTtlInSeconds: 0,
    });
    expect(authorizer.Properties.IdentitySource).toBeUndefined();
    expect(JSON.stringify(authorizer.Properties.AuthorizerUri)).toContain(
      logicalId(stack.functions.get('authorizer')!.fn.fn.node.defaultChild),
    );
  });

  it('throttles the stage and writes JSON access logs, from the configuration', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: cdkContext.apiThrottleRateLimit,
        ThrottlingBurstLimit: cdkContext.apiThrottleBurstLimit,
      },
    });
    const [, stage] = ofApi('AWS::ApiGatewayV2::Stage', stack.api.httpApi.node.defaultChild)[0]!;
    expect(JSON.parse(stage.Properties.AccessLogSettings.Format)).toMatchObject({
      requestId: '$context.requestId',
      status: '$context.status',
    });
  });
});

describe('bridge socket (sandbox programs take their commands over it)', () => {
  const api = () => stack.bridgeSocket.api.node.defaultChild;

  it('has exactly $connect (the connect function) and $default (a MOCK that answers a pong): nothing a program sends reaches a function', () => {
    const routesMade = ofApi('AWS::ApiGatewayV2::Route', api()).map(([, r]) => r.Properties);
    expect(routesMade.map((r) => r.RouteKey).sort()).toEqual(['$connect', '$default']);
    const integrations = ofApi('AWS::ApiGatewayV2::Integration', api());
    const targetOf = (key: string) =>
      resources[routesMade.find((r) => r.RouteKey === key)!.Target['Fn::Join'][1][1].Ref]!.Properties;
    expect(JSON.stringify(targetOf('$connect').IntegrationUri)).toContain(
      logicalId(stack.functions.get(bridgeSocketConnectFunction.id)!.fn.fn.node.defaultChild),
    );
    expect(targetOf('$default').IntegrationType).toBe('MOCK');
    expect(integrations).toHaveLength(2);
    const [, response] = ofApi('AWS::ApiGatewayV2::IntegrationResponse', api())[0]!;
    expect(response.Properties.ResponseTemplates).toEqual({ $default: BRIDGE_SOCKET_PONG });
    expect(ofApi('AWS::ApiGatewayV2::RouteResponse', api())).toHaveLength(1);
  });

  it('throttles its stage from the configuration', () => {
    const [, stage] = ofApi('AWS::ApiGatewayV2::Stage', api())[0]!;
    expect(stage.Properties).toMatchObject({
      StageName: 'bridge',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: cdkContext.apiThrottleRateLimit,
        ThrottlingBurstLimit: cdkContext.apiThrottleBurstLimit,
      },
    });
  });

  it('lets exactly the functions that queue commands or wake a claimed standby post to its connections, and nothing else of any API', () => {
    const posting = [...stack.functions]
      .filter(([, { access }]) => access.capabilities?.includes('commands:push'))
      .map(([id]) => id);
    expect(posting.sort()).toEqual(
      [
        'startConversation',
        'sendMessage',
        'pauseConversation',
        'runConversation',
        'respondToConfirmation',
        'legacyCreateConversation',
        'legacyDeleteConversation',
        'streamMessage',
        'agentServerInterrupt',
        // At the plan's event cap it pauses the conversation's sandbox.
        'postEvents',
        // Workspace reads are commands to the sandbox program, answered on the bridge.
        'workspaceFiles',
        'workspaceFile',
        'workspaceGitChanges',
        'workspaceGitDiff',
        'agentGitChanges',
        'agentGitDiff',
        // A warm-pool claim wakes the standby on its pool socket.
        'startSandbox',
        'resumeSandbox',
        // And the sweeper's claim for a retried start.
        'sweeper',
      ].sort(),
    );
    const granted: string[] = [];
    for (const [id, { fn }] of stack.functions) {
      const statements = resources[logicalId(fn.role.node.findChild('DefaultPolicy').node.defaultChild)]!.Properties
        .PolicyDocument.Statement as Json[];
      const onSocket = statements.filter((st) => JSON.stringify(st.Resource).includes(logicalId(api())));
      if (onSocket.length) granted.push(id);
      for (const st of onSocket) {
        expect([st.Action].flat(), id).toEqual(['execute-api:ManageConnections']);
        // CDK merges statements with the same action: keep the resources on this API.
        expect(
          [st.Resource]
            .flat()
            .map((r) => JSON.stringify(r))
            .filter((r) => r.includes(logicalId(api()))),
          id,
        ).toEqual([expect.stringContaining('/bridge/POST/@connections/*')]);
      }
    }
    expect(granted.sort()).toEqual(posting.sort());
  });

  it('gives sandbox programs its URL in every spec task definition; the connect function holds the sandboxes and pool tables alone', () => {
    for (const { taskDefinition } of stack.sandboxes.taskDefinitions) {
      const env = resources[logicalId(taskDefinition.node.defaultChild)]!.Properties.ContainerDefinitions[0]
        .Environment as Json[];
      expect(env.map((e) => e.Name)).toEqual(['BRIDGE_SOCKET_URL']);
    }
    const connect = stack.functions.get(bridgeSocketConnectFunction.id)!;
    // pool: a standby's pool socket, recorded on its pool item.
    expect(connect.access.tables).toEqual({ sandboxes: 'write', pool: 'write' });
    expect(connect.access.capabilities).toBeUndefined();
  });
});

describe('event stream (WebSocket API) and CloudFront', () => {
  const wsApiId = () => ({ Ref: logicalId(stack.stream.api.node.defaultChild) });
  const ofWsApi = (type: string) =>
    ofType(type).filter(([, r]) => JSON.stringify(r.Properties.ApiId) === JSON.stringify(wsApiId()));

  it('a WebSocket API with $connect, $disconnect and $default on their functions and a mock ping, on a throttled, logged stage', () => {
    const [, api] = ofType('AWS::ApiGatewayV2::Api').find(([id]) => id === wsApiId().Ref)!;
    expect(api.Properties.ProtocolType).toBe('WEBSOCKET');
    const routesOf = Object.fromEntries(
      ofWsApi('AWS::ApiGatewayV2::Route').map(([, r]) => [r.Properties.RouteKey, r.Properties]),
    );
    expect(Object.keys(routesOf).sort()).toEqual(['$connect', '$default', '$disconnect', 'ping']);
    const integration = (key: string) => resources[routesOf[key].Target['Fn::Join'][1][1].Ref]!.Properties;
    expect(JSON.stringify(integration('$connect').IntegrationUri)).toContain(
      logicalId(stack.functions.get('streamConnect')!.fn.fn.node.defaultChild),
    );
    expect(JSON.stringify(integration('$disconnect').IntegrationUri)).toContain(
      logicalId(stack.functions.get('streamDisconnect')!.fn.fn.node.defaultChild),
    );
    expect(JSON.stringify(integration('$default').IntegrationUri)).toContain(
      logicalId(stack.functions.get('streamMessage')!.fn.fn.node.defaultChild),
    );
    expect(routesOf.$default.RouteResponseSelectionExpression).toBe('$default');
    expect(integration('ping').IntegrationType).toBe('MOCK');
    const [, stage] = ofWsApi('AWS::ApiGatewayV2::Stage')[0]!;
    expect(stage.Properties).toMatchObject({
      StageName: 'sockets',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: cdkContext.apiThrottleRateLimit },
    });
    expect(JSON.parse(stage.Properties.AccessLogSettings.Format)).toMatchObject({
      connectionId: '$context.connectionId',
      eventType: '$context.eventType',
    });
  });

  it("grants PostToConnection, GetConnection and DeleteConnection on the stage's @connections only (closing alone: DELETE), and the resend invoke on that one function", () => {
    // The resend function's name, and the ARN its invokers (itself too: a long replay continues) are granted and given.
    const resendName = functionNameOf(stack.stackName, 'streamResend');
    expect(
      resources[logicalId(stack.functions.get('streamResend')!.fn.fn.node.defaultChild)]!.Properties.FunctionName,
    ).toBe(resendName);
    const resendArn = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':lambda:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          `:function:${resendName}`,
        ],
      ],
    };
    for (const [id, { fn, access }] of stack.functions) {
      const statements = resources[logicalId(fn.role.node.findChild('DefaultPolicy').node.defaultChild)]!.Properties
        .PolicyDocument.Statement as Json[];
      const caps = access.capabilities ?? [];
      const verbs = caps.includes('stream:push')
        ? ['DELETE', 'GET', 'POST']
        : caps.includes('stream:close')
          ? ['DELETE']
          : [];
      // CDK merges statements with the same action (the bridge socket's is its own test above): keep this API's.
      const onStream = statements
        .filter((s) => [s.Action].flat().includes('execute-api:ManageConnections'))
        .flatMap((s) => [s.Resource].flat().map((r: unknown) => JSON.stringify(r)))
        .filter((r) => r.includes(wsApiId().Ref));
      const granted = onStream.map((r) => /\/sockets\/(POST|GET|DELETE)\/@connections\/\*/.exec(r)?.[1] ?? r);
      expect(granted.sort(), id).toEqual(verbs);
      // Asynchronous invokes: $connect (or the first message of a socket that authenticates by message)
      // of the resend function; what finishes a sandbox's delete, of the snapshot-removal function; what
      // claims a standby (or replaces one), of the pool's refill function.
      const invoke = statements.filter((s) => [s.Action].flat().includes('lambda:InvokeFunction'));
      const invokes = [
        ...(caps.includes('stream:resend') ? ['streamResend'] : []),
        ...(caps.includes('snapshots:delete') ? ['sandboxSnapshotsDelete'] : []),
        ...(caps.includes('pool:refill') ? ['poolRefill'] : []),
      ];
      // The resend function is named ahead (it invokes itself: its own ARN from the function would be a cycle).
      const arn = (fn: string) =>
        fn === 'streamResend'
          ? resendArn
          : { 'Fn::GetAtt': [logicalId(stack.functions.get(fn)!.fn.fn.node.defaultChild), 'Arn'] };
      expect(invoke.map((s) => JSON.stringify(s.Resource)).sort(), id).toEqual(
        invokes.map((fn) => JSON.stringify(arn(fn))).sort(),
      );
      // What claims a standby starts its binding deadline: that one state machine, nothing else.
      const machineId = ofType('AWS::StepFunctions::StateMachine')[0]![0];
      const executions = statements.filter((s) => [s.Action].flat().includes('states:StartExecution'));
      expect(
        executions.map((s) => JSON.stringify(s.Resource)),
        id,
      ).toEqual(caps.includes('pool:deadline') ? [JSON.stringify({ 'Fn::GetAtt': [machineId, 'Arn'] })] : []);
    }
  });

  it('keeps connections by conversation with a TTL, and finds them by connection id', () => {
    expect(tables.streamConnections).toMatchObject({
      pk: 'conversationKey',
      sk: 'connectionId',
      ttl: 'expiresAtEpoch',
      indexes: { byConnection: { pk: 'connectionId' } },
    });
  });

  it('CloudFront: /sockets/* to the WebSocket API through the path function, the rest to the HTTP API, nothing cached, everything but Host forwarded', () => {
    const [, dist] = ofType('AWS::CloudFront::Distribution')[0]!;
    const config = dist.Properties.DistributionConfig;
    const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
    const ALL_VIEWER_EXCEPT_HOST = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';
    const originOf = (id: string) => JSON.stringify(config.Origins.find((o: Json) => o.Id === id).DomainName);
    expect(config.DefaultCacheBehavior).toMatchObject({
      CachePolicyId: CACHING_DISABLED,
      OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST,
      ViewerProtocolPolicy: 'https-only',
    });
    expect(config.DefaultCacheBehavior.AllowedMethods).toEqual(
      expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']),
    );
    expect(originOf(config.DefaultCacheBehavior.TargetOriginId)).toContain(
      logicalId(stack.api.httpApi.node.defaultChild),
    );
    expect(config.CacheBehaviors).toHaveLength(1);
    const sockets = config.CacheBehaviors[0];
    expect(sockets).toMatchObject({
      PathPattern: '/sockets/*',
      CachePolicyId: CACHING_DISABLED,
      OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST,
    });
    expect(originOf(sockets.TargetOriginId)).toContain(wsApiId().Ref);
    expect(sockets.FunctionAssociations).toEqual([{ EventType: 'viewer-request', FunctionARN: expect.anything() }]);
    expect(config.Origins.every((o: Json) => o.CustomOriginConfig.OriginProtocolPolicy === 'https-only')).toBe(true);
    expect(config.PriceClass).toBe('PriceClass_100');
  });
});

describe('functions', () => {
  it('has one function per route plus the authorizer and the fallback (and the event functions when present)', () => {
    const expected = [...routeDefs.map((r) => r.id), 'authorizer', 'fallback', bridgeSocketConnectFunction.id];
    if (entryExists(ecsEventsFunction.entry)) expected.push('ecsEvents');
    if (entryExists(sweeperFunction.entry)) expected.push('sweeper');
    expected.push('streamConnect', 'streamDisconnect', 'streamMessage', 'streamResend', 'sandboxSnapshotsDelete');
    expected.push('poolRefill', 'usageReconcile', 'billingExport');
    expect([...stack.functions.keys()].sort()).toEqual(expected.sort());
    // Plus CDK's own provider of the image size custom resource (infra/constructs/image-size.ts), run only at deploys.
    expect(ofType('AWS::Lambda::Function')).toHaveLength(expected.length + 1);
  });

  it('runs every function on ARM64, Node 22 or newer, traced, logging JSON to the shared log group', () => {
    for (const [id, { fn }] of stack.functions) {
      const props = resources[logicalId(fn.fn.node.defaultChild)]!.Properties;
      expect(props.Architectures, id).toEqual(['arm64']);
      expect(Number(/^nodejs(\d+)\.x$/.exec(props.Runtime)?.[1]), id).toBeGreaterThanOrEqual(22);
      expect(props.Handler, id).toBe('index.handler');
      expect(props.TracingConfig, id).toEqual({ Mode: 'Active' });
      expect(props.LoggingConfig, id).toEqual({
        LogFormat: 'JSON',
        LogGroup: { Ref: logicalId(stack.functionLogs.node.defaultChild) },
      });
    }
  });

  it("gives each route function its entry's time-out (default 10 s), within API Gateway's 30 s integration limit", () => {
    const declared = routeDefs.filter((r) => r.timeoutSeconds !== undefined);
    expect(declared.length).toBeGreaterThan(0);
    for (const route of routeDefs) {
      const { fn } = stack.functions.get(route.id)!;
      const timeout = resources[logicalId(fn.fn.node.defaultChild)]!.Properties.Timeout;
      expect(timeout, route.id).toBe(route.timeoutSeconds ?? ROUTE_TIMEOUT_SECONDS);
      expect(timeout, route.id).toBeLessThanOrEqual(MAX_ROUTE_TIMEOUT_SECONDS);
    }
    // An integration's own limit, where one is set, leaves the function time to answer.
    for (const [id, integration] of ofType('AWS::ApiGatewayV2::Integration')) {
      const limit = integration.Properties.TimeoutInMillis;
      if (limit !== undefined) expect(limit, id).toBeGreaterThan(MAX_ROUTE_TIMEOUT_SECONDS * 1000);
    }
    expect(() => routeTimeout({ ...routeDefs[0]!, timeoutSeconds: 30 })).toThrow(/30 s/);
    expect(() => routeTimeout({ ...routeDefs[0]!, timeoutSeconds: 0 })).toThrow(/timeoutSeconds 0/);
  });

  it('gives each function only the environment its declaration needs', () => {
    for (const [id, { fn, access }] of stack.functions) {
      const env = Object.keys(
        resources[logicalId(fn.fn.node.defaultChild)]!.Properties.Environment?.Variables ?? {},
      ).sort();
      // The one derivation (shared/wiring/needs.ts) the wiring test builds each adapter with.
      // Every function knows the service's one public URL (CloudFront).
      const expected = ['POWERTOOLS_SERVICE_NAME', 'PUBLIC_BASE_URL', ...environmentNames(access)];
      // The authorizer and the stream's $connect take session cookies only from the configured origins.
      if (id === 'authorizer' || id === 'streamConnect') expected.push('CORS_ORIGINS');
      // The console's page may fetch the issuer's token endpoint (its Content-Security-Policy).
      if (id === 'console' || id === 'consoleCallback') expected.push('OIDC_CONNECT_ORIGINS');
      expect(env, id).toEqual([...new Set(expected)].sort());
    }
  });

  it('derives the environment from tables and capabilities alone: no secrets key or sandbox settings where none is declared', () => {
    const envOf = (id: string) =>
      Object.keys(
        resources[logicalId(stack.functions.get(id)!.fn.fn.node.defaultChild)]!.Properties.Environment.Variables,
      ).sort();
    // A conversation key's view of the settings names its conversation's model: the conversations table, read.
    expect(envOf('getSettings')).toEqual([
      'POWERTOOLS_SERVICE_NAME',
      'PUBLIC_BASE_URL',
      'TABLE_CONVERSATIONS',
      'TABLE_SETTINGS',
    ]);
    expect(envOf('searchSandboxSpecs')).toEqual(['POWERTOOLS_SERVICE_NAME', 'PUBLIC_BASE_URL', 'SANDBOX_SPECS']);
    // A pause writes the closing record (docs/billing.md): the spec's size, the prices, the ledger and its retention.
    expect(envOf('pauseSandbox')).toEqual(
      expect.arrayContaining([...SANDBOX_ENV, 'PRICES', 'TABLE_USAGE', 'USAGE_RETENTION_DAYS']),
    );
    expect(envOf('pauseSandbox')).not.toContain('SECRETS_KEY_ID');
  });

  it('points every function at the CloudFront host, and only those that push to or close stream sockets at the WebSocket API', () => {
    const domain = { 'Fn::GetAtt': [logicalId(stack.front.distribution.node.defaultChild), 'DomainName'] };
    for (const [id, { fn, access }] of stack.functions) {
      const vars = resources[logicalId(fn.fn.node.defaultChild)]!.Properties.Environment.Variables;
      expect(vars.PUBLIC_BASE_URL, id).toEqual({ 'Fn::Join': ['', ['https://', domain]] });
      const caps = access.capabilities ?? [];
      expect('STREAM_CALLBACK_URL' in vars, id).toBe(caps.includes('stream:push') || caps.includes('stream:close'));
    }
  });

  it('never names the API URL in a function environment (that would be a dependency cycle)', () => {
    for (const [, r] of ofType('AWS::Lambda::Function')) {
      expect(JSON.stringify(r.Properties.Environment ?? {})).not.toContain(
        logicalId(stack.api.httpApi.node.defaultChild),
      );
    }
  });
});

describe('IAM: least privilege', () => {
  const policiesOf = (roleId: string) =>
    ofType('AWS::IAM::Policy').filter(([, p]) => (p.Properties.Roles as Json[]).some((r) => r.Ref === roleId));
  const statementsOf = (roleId: string) =>
    policiesOf(roleId).flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Json[]);

  it('allows each function exactly the actions its declaration maps to, no more, no fewer', () => {
    for (const [id, { fn, access, async }] of stack.functions) {
      const roleId = logicalId(fn.role.node.defaultChild);
      const role = resources[roleId]!.Properties;
      expect(role.ManagedPolicyArns, `${id}: managed policies`).toBeUndefined();
      expect(role.Policies, `${id}: inline policies`).toBeUndefined();
      const allowed = new Set(
        statementsOf(roleId)
          .filter((s) => s.Effect === 'Allow')
          .flatMap((s) => [s.Action].flat() as string[]),
      );
      expect([...allowed].sort(), id).toEqual([...expectedActions(access, { async })].sort());
    }
  });

  it('the audit log is append-only: its writers hold PutItem on the table alone (no update, delete or read), its one reader no write', () => {
    const auditTable = logicalId(stack.data.tables.auditLog.node.defaultChild);
    let writers = 0;
    for (const [id, { fn, access }] of stack.functions) {
      const onAudit = statementsOf(logicalId(fn.role.node.defaultChild)).filter((s) =>
        JSON.stringify(s.Resource).includes(auditTable),
      );
      const actions = [...new Set(onAudit.flatMap((s) => [s.Action].flat() as string[]))].sort();
      const level = access.tables?.auditLog;
      if (level === 'append') writers++;
      expect(actions, id).toEqual(
        level === 'append'
          ? ['dynamodb:PutItem']
          : level === 'read'
            ? expect.not.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'])
            : [],
      );
      expect(level, id).not.toBe('write');
      // An append reads nothing, so it needs no index: the table's ARN alone.
      if (level === 'append')
        for (const st of onAudit)
          expect(JSON.stringify(st.Resource), id).not.toContain(`${auditTable}","Arn"]},"/index`);
    }
    expect(writers).toBeGreaterThan(10);
  });

  it('reads and writes only the declared tables: read-only routes have no write action', () => {
    const getSettings = stack.functions.get('getSettings')!;
    const actions = statementsOf(logicalId(getSettings.fn.role.node.defaultChild)).flatMap((s) => [s.Action].flat());
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem']));
    expect(actions.filter((a: string) => a.startsWith('dynamodb:') && /Put|Update|Delete|Write|Scan/.test(a))).toEqual(
      [],
    );
  });

  it('has no wildcard action anywhere', () => {
    for (const [id, p] of ofType('AWS::IAM::Policy')) {
      for (const s of p.Properties.PolicyDocument.Statement as Json[]) {
        for (const action of [s.Action].flat() as string[]) expect(action, id).not.toMatch(/\*/);
      }
    }
  });

  it('passes only the sandbox task and execution roles, only to ECS tasks', () => {
    const sandboxRoles = [stack.sandboxes.taskRole, stack.sandboxes.executionRole].map((r) => ({
      'Fn::GetAtt': [logicalId(r.node.defaultChild), 'Arn'],
    }));
    for (const [id, p] of ofType('AWS::IAM::Policy')) {
      for (const s of p.Properties.PolicyDocument.Statement as Json[]) {
        if (![s.Action].flat().includes('iam:PassRole')) continue;
        expect([s.Action].flat(), id).toEqual(['iam:PassRole']);
        expect([s.Resource].flat(), id).toEqual(sandboxRoles);
        expect(s.Condition, id).toEqual({ StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } });
      }
    }
  });

  it('leaves the sandbox task role empty', () => {
    const roleId = logicalId(stack.sandboxes.taskRole.node.defaultChild);
    expect(policiesOf(roleId)).toEqual([]);
    expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
    expect(resources[roleId]!.Properties.Policies).toBeUndefined();
  });
});

describe('sandbox infrastructure', () => {
  it('is a VPC with public subnets only and no NAT gateway', () => {
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    const subnets = ofType('AWS::EC2::Subnet');
    expect(subnets.length).toBeGreaterThan(0);
    for (const [, s] of subnets) expect(s.Properties.MapPublicIpOnLaunch).toBe(true);
    for (const [, e] of ofType('AWS::EC2::VPCEndpoint'))
      expect(e.Properties.VpcEndpointType ?? 'Gateway').toBe('Gateway');
  });

  it('gives the sandbox security group no ingress rule at all', () => {
    const sgId = logicalId(stack.sandboxes.securityGroup.node.defaultChild);
    expect(resources[sgId]!.Properties.SecurityGroupIngress).toBeUndefined();
    const ingressOnSandboxes = ofType('AWS::EC2::SecurityGroupIngress').filter(([, r]) =>
      JSON.stringify(r.Properties.GroupId).includes(sgId),
    );
    expect(ingressOnSandboxes).toEqual([]);
  });

  it('has no shared file system: no EFS, no mount target, no ingress rule anywhere (workspaces are S3 snapshots)', () => {
    for (const type of [
      'AWS::EFS::FileSystem',
      'AWS::EFS::MountTarget',
      'AWS::EFS::AccessPoint',
      'AWS::EC2::SecurityGroupIngress',
    ])
      template.resourceCountIs(type, 0);
    const env = JSON.stringify(ofType('AWS::Lambda::Function').map(([, r]) => r.Properties.Environment));
    expect(env).not.toContain('SANDBOX_FILE_SYSTEM_ID');
    expect(JSON.stringify(template.toJSON())).not.toContain('elasticfilesystem');
  });

  it('gives the sandbox task role no permissions at all', () => {
    const roleId = logicalId(stack.sandboxes.taskRole.node.defaultChild);
    const attached = ofType('AWS::IAM::Policy').filter(([, r]) => JSON.stringify(r.Properties.Roles).includes(roleId));
    expect(attached).toEqual([]);
    expect(resources[roleId]!.Properties.Policies).toBeUndefined();
    expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it('has a cluster with only the Fargate capacity providers and no service', () => {
    template.resourceCountIs('AWS::ECS::Service', 0);
    template.hasResourceProperties('AWS::ECS::ClusterCapacityProviderAssociations', {
      CapacityProviders: ['FARGATE', 'FARGATE_SPOT'],
    });
  });

  it('registers one ARM64 Fargate task definition per configured spec, from the sandbox image asset', () => {
    const specs = cdkContext.sandboxSpecs as { id: string; cpu: number; memory: number }[];
    const defs = ofType('AWS::ECS::TaskDefinition').map(([, r]) => r.Properties);
    expect(defs).toHaveLength(specs.length);
    for (const spec of specs) {
      const def = defs.find((d) => d.Family === `${stack.stackName}-sandbox-${spec.id}`)!;
      expect(def).toMatchObject({
        Cpu: String(spec.cpu),
        Memory: String(spec.memory),
        RequiresCompatibilities: ['FARGATE'],
        RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
      });
      expect(def.ContainerDefinitions[0].Name).toBe('sandbox');
      expect(JSON.stringify(def.ContainerDefinitions[0].Image)).toContain('container-assets');
      // Time after SIGTERM for the last workspace snapshot: Fargate's maximum, Spot's notice.
      expect(def.ContainerDefinitions[0].StopTimeout).toBe(120);
    }
  });

  it('gives each claim its binding deadline: a state machine that waits 10 s, then invokes the sweeper, started by the starting routes alone', () => {
    const machines = ofType('AWS::StepFunctions::StateMachine');
    expect(machines).toHaveLength(1);
    const [, machine] = machines[0]!;
    // The definition as CloudFormation joins it, each reference in it named by the resource it points at.
    const refs: string[] = [];
    const joined = (machine.Properties.DefinitionString['Fn::Join'][1] as unknown[])
      .map((part) => {
        if (typeof part === 'string') return part;
        refs.push(JSON.stringify(part));
        return `REF${refs.length - 1}`;
      })
      .join('');
    const definition = JSON.parse(joined);
    expect(definition.States.Wait).toEqual({ Type: 'Wait', Seconds: 10, Next: 'Sweeper' });
    const sweeperId = logicalId(stack.functions.get(sweeperFunction.id)!.fn.fn.node.defaultChild);
    expect(refs[Number(definition.States.Sweeper.Resource.slice(3))]).toBe(
      JSON.stringify({ 'Fn::GetAtt': [sweeperId, 'Arn'] }),
    );
    expect(machine.Properties.StateMachineType).toBe('STANDARD');
  });

  it('builds the sandbox image for linux/arm64 with zstd layers (cdk-assets passes the output to docker build)', () => {
    const manifest = JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.assets.json`), 'utf8'));
    const images = Object.values(manifest.dockerImages as Record<string, { source: Json }>).filter(
      (i) => i.source.dockerFile === 'sandbox/Dockerfile',
    );
    expect(images).toHaveLength(1);
    expect(images[0]!.source.platform).toBe('linux/arm64');
    const outputs = images[0]!.source.dockerOutputs as string[];
    expect(outputs).toHaveLength(1);
    const options = Object.fromEntries(outputs[0]!.split(',').map((kv) => kv.split('=')));
    expect(options).toMatchObject({
      type: 'image',
      compression: 'zstd',
      'force-compression': 'true',
      'oci-mediatypes': 'true',
    });
  });

  it("outputs the image's compressed size: ECR's DescribeImages of the pushed tag at deploy time, by a role that may do nothing else", () => {
    const sizes = ofType('Custom::SandboxImageSize');
    expect(sizes).toHaveLength(1);
    const [id, size] = sizes[0]!;
    expect(template.toJSON().Outputs.SandboxImageCompressedBytes.Value).toEqual({
      'Fn::GetAtt': [id, 'imageDetails.0.imageSizeInBytes'],
    });
    // The call, as the provider runs it at create and at each update (a new image tag is a new call).
    const create = JSON.stringify(size.Properties.Create);
    const update = JSON.stringify(size.Properties.Update);
    const tag = stack.sandboxes.image.imageTag;
    for (const call of [create, update]) {
      expect(call).toContain('\\"service\\":\\"ECR\\"');
      expect(call).toContain('\\"action\\":\\"describeImages\\"');
      expect(call).toContain(`\\"imageIds\\":[{\\"imageTag\\":\\"${tag}\\"}]`);
      expect(call).toContain(`\\"physicalResourceId\\":{\\"id\\":\\"${tag}\\"}`);
      expect(call).toContain('imageDetails.0.imageSizeInBytes');
    }
    // The provider's role: DescribeImages on the assets repository, nothing else.
    const policies = ofType('AWS::IAM::Policy').filter(([pid]) =>
      pid.startsWith('SandboxImageSizeDescribeCustomResourcePolicy'),
    );
    expect(policies).toHaveLength(1);
    const statements = policies[0]![1].Properties.PolicyDocument.Statement as Json[];
    expect(statements.map((st) => st.Action)).toEqual(['ecr:DescribeImages']);
    expect(JSON.stringify(statements[0]!.Resource)).toContain('container-assets');
    expect(JSON.stringify(statements[0]!.Resource)).not.toContain('*');
  });

  it('keeps workspace snapshots in a private, encrypted, TLS-only, lifecycle-managed bucket', () => {
    const [id, bucket] = ofType('AWS::S3::Bucket').find(([k]) => k.includes('WorkspaceSnapshots'))! as [
      string,
      { Properties: Json },
    ];
    expect(bucket.Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LifecycleConfiguration: {
        Rules: expect.arrayContaining([
          expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }),
        ]),
      },
    });
    const policy = ofType('AWS::S3::BucketPolicy')
      .map(([, r]) => r.Properties)
      .find((p) => JSON.stringify(p.Bucket).includes(id))!;
    expect(JSON.stringify(policy.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
  });

  it('writes the spec registry the sandbox-spec routes read', () => {
    const registry = stack.resolve(stack.sandboxes.specRegistry('2025-01-01T00:00:00.000Z')) as Json[];
    expect(registry).toHaveLength((cdkContext.sandboxSpecs as unknown[]).length);
    expect(Object.keys(registry[0]!).sort()).toEqual(
      [
        'command',
        'cpu',
        'created_at',
        'family',
        'id',
        'initial_env',
        'memory',
        'spot',
        'spot_fallback',
        'task_definition_arn',
        'working_dir',
      ].sort(),
    );
    expect(registry[0]).toMatchObject({
      id: 'default',
      cpu: 1024,
      memory: 2048,
      spot: false,
      spot_fallback: false,
      command: null,
      initial_env: {},
      working_dir: '/workspace',
    });
  });
});

describe('event functions (written on the sandboxes branch)', () => {
  const ecsPresent = entryExists(ecsEventsFunction.entry);
  const sweeperPresent = entryExists(sweeperFunction.entry);

  it.skipIf(!ecsPresent)(
    'routes STOPPED sandbox task events to ecs-events, with a DLQ and an on-failure destination',
    () => {
      const fnId = logicalId(stack.functions.get('ecsEvents')!.fn.fn.node.defaultChild);
      const queue = { 'Fn::GetAtt': [logicalId(stack.failureQueue.node.defaultChild), 'Arn'] };
      template.hasResourceProperties('AWS::Events::Rule', {
        EventPattern: {
          source: ['aws.ecs'],
          'detail-type': ['ECS Task State Change'],
          detail: {
            clusterArn: [{ 'Fn::GetAtt': [logicalId(stack.sandboxes.cluster.node.defaultChild), 'Arn'] }],
            lastStatus: ['STOPPED', 'RUNNING'],
          },
        },
        Targets: [{ Arn: { 'Fn::GetAtt': [fnId, 'Arn'] }, DeadLetterConfig: { Arn: queue } }],
      });
      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: fnId },
        DestinationConfig: { OnFailure: { Destination: queue } },
      });
    },
  );

  it.skipIf(!sweeperPresent)(
    'runs the sweeper every minute from EventBridge Scheduler, with a DLQ and an on-failure destination',
    () => {
      const fnId = logicalId(stack.functions.get('sweeper')!.fn.fn.node.defaultChild);
      const queue = { 'Fn::GetAtt': [logicalId(stack.failureQueue.node.defaultChild), 'Arn'] };
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'rate(1 minute)',
        Target: { Arn: { 'Fn::GetAtt': [fnId, 'Arn'] }, DeadLetterConfig: { Arn: queue } },
      });
      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: fnId },
        DestinationConfig: { OnFailure: { Destination: queue } },
      });
    },
  );

  it('runs the usage reconcile every night at 01:15 UTC from EventBridge Scheduler, with retries and a DLQ', () => {
    const fn = stack.functions.get('usageReconcile')!.fn.fn;
    const fnId = logicalId(fn.node.defaultChild);
    const queue = { 'Fn::GetAtt': [logicalId(stack.failureQueue.node.defaultChild), 'Arn'] };
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'cron(15 1 * * ? *)',
      Target: {
        Arn: { 'Fn::GetAtt': [fnId, 'Arn'] },
        DeadLetterConfig: { Arn: queue },
        RetryPolicy: { MaximumRetryAttempts: 2 },
      },
    });
    // A night's run pages through two days of records and waits out its counters' second look.
    expect(resources[fnId]!.Properties.Timeout).toBe(900);
    expect(Object.keys(resources[fnId]!.Properties.Environment.Variables)).toEqual(
      expect.arrayContaining(['TABLE_USAGE', 'TABLE_SANDBOXES', 'TABLE_CONVERSATIONS']),
    );
  });

  it.skipIf(!ecsPresent || !sweeperPresent)('gives both event functions the sandbox environment', () => {
    for (const id of ['ecsEvents', 'sweeper']) {
      const vars =
        resources[logicalId(stack.functions.get(id)!.fn.fn.node.defaultChild)]!.Properties.Environment.Variables;
      expect(Object.keys(vars), id).toEqual(expect.arrayContaining([...SANDBOX_ENV, 'TABLE_SANDBOXES']));
      expect(vars.SANDBOX_START_TIMEOUT_SECONDS).toBe(String(cdkContext.sandboxStartTimeoutSeconds));
    }
  });
});

describe('secrets, logs, observability, outputs', () => {
  it('seals secrets with a rotating KMS key that outlives the stack', () => {
    template.hasResource('AWS::KMS::Key', { Properties: { EnableKeyRotation: true }, DeletionPolicy: 'Retain' });
  });

  it('keeps every log group for the configured retention only', () => {
    const groups = ofType('AWS::Logs::LogGroup');
    expect(groups.length).toBeGreaterThanOrEqual(4);
    for (const [id, g] of groups) expect(g.Properties.RetentionInDays, id).toBe(cdkContext.logRetentionDays);
  });

  it('turns the request, sandbox and conversation log lines into metrics', () => {
    const filters = Object.fromEntries(
      ofType('AWS::Logs::MetricFilter').map(([, f]) => [
        f.Properties.MetricTransformations[0].MetricName,
        f.Properties,
      ]),
    );
    expect(Object.keys(filters).sort()).toEqual([
      'ConversationsStarted',
      'SandboxFailures',
      'SandboxStartLatency',
      'SandboxStarts',
      'ServerErrors',
    ]);
    expect(filters.ServerErrors.FilterPattern).toBe('{ ($.message = "request") && ($.status >= 500) }');
    expect(filters.SandboxStartLatency.MetricTransformations[0].MetricValue).toBe('$.startLatencyMs');
    expect(filters.SandboxStarts.FilterPattern).toBe('{ $.message = "sandbox.started" }');
    expect(filters.ConversationsStarted.FilterPattern).toBe('{ $.message = "conversation.started" }');
  });

  it('alarms to the alarm topic and has one dashboard', () => {
    const alarms = ofType('AWS::CloudWatch::Alarm');
    expect(alarms.length).toBeGreaterThanOrEqual(4);
    for (const [id, a] of alarms) expect(a.Properties.AlarmActions, id).toHaveLength(1);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('outputs the API URL, every table name, the cluster and the secrets key', () => {
    const outputs = Object.keys(template.toJSON().Outputs);
    expect(outputs).toEqual(
      expect.arrayContaining(['ApiUrl', 'KeysTableName', 'SettingsTableName', 'ClusterArn', 'SecretsKeyId']),
    );
    for (const key of tableKeys) expect(outputs).toContain(`${key[0]!.toUpperCase()}${key.slice(1)}TableName`);
  });
});

describe('the OpenHands UI gates', () => {
  const statementsOfFn = (id: string) => {
    const roleId = logicalId(stack.functions.get(id)!.fn.role.node.defaultChild);
    return ofType('AWS::IAM::Policy')
      .filter(([, p]) => (p.Properties.Roles as Json[]).some((r) => r.Ref === roleId))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Json[]);
  };
  const resourcesFor = (id: string, action: string) =>
    JSON.stringify(
      statementsOfFn(id)
        .filter((s) => [s.Action].flat().includes(action))
        .map((s) => s.Resource),
    );
  const tableRef = (key: keyof typeof tables) => logicalId(stack.data.tables[key].node.defaultChild);
  const synthWith = (context: Record<string, unknown>) => {
    const app = new App({ context: { ...cdkContext, ...context, 'aws:cdk:bundling-stacks': [] } });
    const s = buildApp(app);
    return { s, t: Template.fromStack(s) };
  };

  it('the authorizer reads conversations (key versions) and may open the sealed conversation-key secret, nothing more', () => {
    expect(resourcesFor('authorizer', 'dynamodb:GetItem')).toContain(tableRef('conversations'));
    expect(resourcesFor('authorizer', 'dynamodb:PutItem')).not.toContain(tableRef('conversations'));
    expect(resourcesFor('authorizer', 'kms:Decrypt')).toContain(logicalId(stack.secretsKey.node.defaultChild));
    expect(
      statementsOfFn('authorizer')
        .flatMap((s) => [s.Action].flat())
        .filter((a: string) => a.startsWith('ecs:')),
    ).toEqual([]);
  });

  it('key routes touch only the keys table (and the idempotency table and audit log they declare); the options and docs-asset routes touch nothing', () => {
    for (const id of ['listKeys', 'createKey', 'deleteKey', 'authenticate', 'logout']) {
      const tablesTouched = statementsOfFn(id).filter((s) =>
        [s.Action].flat().some((a: string) => a.startsWith('dynamodb:')),
      );
      expect(JSON.stringify(tablesTouched.map((s) => s.Resource)), id).toContain(tableRef('keys'));
      // createKey also records its answer for retries (idempotency); both write the audit log.
      const owned: Record<string, (typeof tableKeys)[number][]> = {
        createKey: ['keys', 'idempotency', 'auditLog'],
        deleteKey: ['keys', 'auditLog'],
      };
      const own = owned[id] ?? ['keys'];
      for (const table of own)
        expect(JSON.stringify(tablesTouched.map((s) => s.Resource)), id).toContain(tableRef(table));
      for (const other of tableKeys.filter((k) => !own.includes(k)))
        expect(JSON.stringify(tablesTouched.map((s) => s.Resource)), `${id} ${other}`).not.toContain(tableRef(other));
    }
    expect(
      statementsOfFn('listKeys')
        .flatMap((s) => [s.Action].flat())
        .filter((a: string) => /^dynamodb:.*(Put|Update|Delete|Write)/.test(a)),
    ).toEqual([]);
    for (const id of ['getOptionsConfig', 'getOptionsModels', 'docsAsset']) {
      expect(
        statementsOfFn(id)
          .flatMap((s) => [s.Action].flat())
          .filter((a: string) => !/^(logs|xray):/.test(a)),
        id,
      ).toEqual([]);
    }
  });

  it("the console's page and asset functions touch nothing (the files they carry: test/tier/deployment.test.ts)", () => {
    for (const id of ['console', 'consoleCallback', 'consoleAsset', 'docsAsset']) {
      expect(
        statementsOfFn(id)
          .flatMap((s) => [s.Action].flat())
          .filter((a: string) => !/^(logs|xray):/.test(a)),
        id,
      ).toEqual([]);
    }
  });

  it('no CORS configuration without configured origins', () => {
    const [, api] = ofType('AWS::ApiGatewayV2::Api')[0]!;
    expect(api.Properties.CorsConfiguration).toBeUndefined();
  });

  it('with origins configured: API Gateway answers preflights for them with credentials, and the authorizer knows them', () => {
    const { s, t } = synthWith({ corsAllowedOrigins: ['https://app.example.com', 'http://localhost:3001'] });
    t.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      CorsConfiguration: {
        AllowOrigins: ['https://app.example.com', 'http://localhost:3001'],
        AllowCredentials: true,
        // The same lists the local gateway answers with.
        AllowHeaders: CORS_ALLOW_HEADERS,
        AllowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
        ExposeHeaders: ['x-request-id', 'x-paused-sandbox-ids', 'idempotent-replayed', 'retry-after'],
        MaxAge: 3600,
      },
    });
    // Ours, and what OpenHands' clients send on every request.
    expect(CORS_ALLOW_HEADERS).toEqual(
      expect.arrayContaining([
        'x-session-api-key',
        'authorization',
        'idempotency-key',
        'x-openhands-client',
        'x-org-id',
      ]),
    );
    const authorizer =
      t.toJSON().Resources[s.getLogicalId(s.functions.get('authorizer')!.fn.fn.node.defaultChild as CfnElement)];
    expect(authorizer.Properties.Environment.Variables.CORS_ORIGINS).toBe(
      'https://app.example.com,http://localhost:3001',
    );
  });

  it('with "*": any origin may read, but never with credentials', () => {
    const { t } = synthWith({ corsAllowedOrigins: ['*'] });
    t.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      CorsConfiguration: { AllowOrigins: ['*'], AllowCredentials: false },
    });
  });

  it("with an external issuer whose token endpoint is on another origin: the console's page may fetch both (its CSP)", () => {
    const { s } = synthWith({
      cognito: false,
      oidcIssuer: 'https://issuer.example.com/tenant',
      oidcAudience: 'acs',
      oidcConnectOrigins: ['https://oauth2.example.com'],
    });
    for (const id of ['console', 'consoleCallback']) {
      const fn = s.functions.get(id)!.fn.fn;
      const own = Stack.of(fn);
      const env =
        Template.fromStack(own).toJSON().Resources[own.getLogicalId(fn.node.defaultChild as CfnElement)].Properties
          .Environment.Variables;
      expect(env.OIDC_CONNECT_ORIGINS, id).toBe('https://issuer.example.com,https://oauth2.example.com');
    }
  });
});

describe('ingestReservedConcurrency (shared account concurrency)', () => {
  const reserved = (t: Json) =>
    Object.entries(t.Resources as Record<string, Json>)
      .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.ReservedConcurrentExecutions !== undefined)
      .map(([id, r]) => [id, r.Properties.ReservedConcurrentExecutions]);

  it('unset by default: no function reserves any (a default reservation can fail cdk deploy on a new account)', () => {
    expect(cdkContext.ingestReservedConcurrency).toBeUndefined();
    expect(reserved(template.toJSON())).toEqual([]);
  });

  it('set: reserves exactly that on the event-ingest function and on no other', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acs-cdk-reserved-'));
    try {
      // No bundling: only the template is asserted here (the full synthesis above bundles).
      const app = new App({
        context: { ...cdkContext, ingestReservedConcurrency: 40, 'aws:cdk:bundling-stacks': [] },
        outdir: dir,
      });
      const other = buildApp(app);
      // Route functions live in nested stacks: look in every stack of the app.
      const found = app.node
        .findAll()
        .filter((c): c is Stack => Stack.isStack(c))
        .flatMap((st) => reserved(Template.fromStack(st).toJSON()).map(([id, n]) => [st.node.path, id, n]));
      const ingestFn = other.functions.get('postEvents')!.fn.fn.node.defaultChild as CfnElement;
      const ingestStack = Stack.of(ingestFn);
      expect(found).toEqual([[ingestStack.node.path, ingestStack.getLogicalId(ingestFn), 40]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
