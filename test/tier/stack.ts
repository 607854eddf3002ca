import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { build } from 'esbuild';
import { REPO_ROOT, sandboxImageOptions } from '#infra/bundle.ts';
import { STREAM_STAGE } from '#infra/constructs/stream.ts';
import { startDynalite, type EmbeddedDynamo } from '#infra/local/dynamo.ts';
import { KmsSealer } from '#shared/secrets/kms-sealer.ts';
import { endpointConfig } from '#shared/store/dynamo.ts';
import { startTestIssuer, type TestIssuer } from '#test/helpers/oidc-issuer.ts';
import { apiCaller, ROOMY_PLANS, type ApiCall } from '#test/helpers/stack.ts';
import { HttpApiEmulator } from '#test/tier/api-gateway.ts';
import { CloudFrontEmulator } from '#test/tier/cloudfront.ts';
import { FunctionUrlEmulator } from '#test/tier/function-url.ts';
import { FakeAws, OPERATOR_KEY, type EcsTask, type StartDelays } from '#test/tier/aws.ts';
import { EventBus } from '#test/tier/events.ts';
import { rolePolicies } from '#test/tier/iam.ts';
import { crossCheckFindings, describeFindings, useKeyPolicies } from '#test/tier/iam-crosscheck.ts';
import { LambdaService } from '#test/tier/lambda.ts';
import {
  CDK_OUT,
  functionsOf,
  loadTemplate,
  names,
  ofType,
  REGION,
  resolveTemplate,
  STACK,
  type Template,
} from '#test/tier/template.ts';
import { WebSocketApiEmulator } from '#test/tier/websocket-api.ts';

/**
 * The deployment, run locally from what `npm run synth` wrote: the template's tables in dynalite,
 * the fakes of the AWS APIs behind the IAM checks, every function's bundle in its own process, the
 * HTTP API in front, EventBridge and the Scheduler. `mutate` edits a copy of the template first
 * (the mutation cases).
 */
export interface TierStack {
  url: string;
  template: Template;
  resolved: Template;
  outputs: Record<string, string>;
  api: HttpApiEmulator;
  /** The WebSocket API (the event stream), reached directly at `sockets.url/<stage>`. */
  sockets: WebSocketApiEmulator;
  /** The bridge socket (sandbox programs take their commands over it); the sandbox tasks reach it at `bridgeSocket.url/<stage>`. */
  bridgeSocket: WebSocketApiEmulator;
  /** Every WebSocket API of the template, the stream's included. */
  webSockets: WebSocketApiEmulator[];
  /** CloudFront in front of both APIs: `front.url` is the service's one public host. */
  front: CloudFrontEmulator;
  /** The function URLs (the LLM gateway's, behind CloudFront `/llm/*` with origin access control). */
  functionUrls: FunctionUrlEmulator;
  aws: FakeAws;
  /**
   * Cognito's OpenID side for the stack's user pool (infra/constructs/sign-in.ts): discovery and JWKS on
   * loopback; functions read it where the template says `https://cognito-idp.<region>.amazonaws.com/<pool>`.
   * `clientId` is the pool client's id, which access tokens carry as `client_id`.
   */
  cognito: TestIssuer & { clientId: string };
  lambda: LambdaService;
  bus: EventBus;
  /** Table TTL settings of the template (dynalite cannot expire items: noted, not enforced). */
  ttl: Record<string, string>;
  /** A request to the API; `key` is sent as X-Session-API-Key (none by default). */
  call: ApiCall;
  /** `npm run keys -- <args> --aws` as docs/deploy.md says, with the operator's credentials against the tier's DynamoDB. */
  keys(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /**
   * A sandbox's own session key, which no API response shows: read from its record and unsealed
   * with the operator's credentials (as only an operator could), for tests of the bridge routes.
   */
  sandboxKey(sandboxId: string): Promise<string | null>;
  /** What the functions behind the last failed requests logged, to explain a failure. */
  explain(): string;
  stop(): Promise<void>;
}

/** The image's program, built from sandbox/ exactly as sandbox/Dockerfile builds /app/main.mjs. */
async function buildSandboxProgram(dir: string): Promise<string> {
  const outfile = join(dir, 'sandbox-image', 'main.mjs');
  await build(sandboxImageOptions(outfile));
  return outfile;
}

/** The template's tables, created in dynalite as CloudFormation would. */
async function createTables(resolved: Template, endpoint: string): Promise<Record<string, string>> {
  const client = new DynamoDBClient({
    ...endpointConfig(endpoint),
    region: REGION,
    credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'x' },
  });
  const ttl: Record<string, string> = {};
  for (const type of ['AWS::DynamoDB::GlobalTable', 'AWS::DynamoDB::Table']) {
    for (const [id, r] of ofType(resolved, type)) {
      const p = r.Properties;
      const name = p.TableName ?? `AgentConversationService-${id}`;
      if (p.TimeToLiveSpecification?.Enabled) ttl[name] = p.TimeToLiveSpecification.AttributeName;
      await client.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: p.AttributeDefinitions,
          KeySchema: p.KeySchema,
          ...(p.GlobalSecondaryIndexes?.length
            ? {
                GlobalSecondaryIndexes: p.GlobalSecondaryIndexes.map((g: any) => ({
                  IndexName: g.IndexName,
                  KeySchema: g.KeySchema,
                  Projection: g.Projection,
                })),
              }
            : {}),
          ...(p.LocalSecondaryIndexes?.length ? { LocalSecondaryIndexes: p.LocalSecondaryIndexes } : {}),
        }),
      );
    }
  }
  client.destroy();
  return ttl;
}

/** An ECS task's state change as EventBridge carries it ("ECS Task State Change"). */
const taskStateEvent = (task: EcsTask) => {
  const { tierLogTail: _tail, ...detail } = task as EcsTask & { tierLogTail?: string };
  return {
    ...detail,
    updatedAt: new Date().toISOString(),
    createdAt: new Date(task.createdAt * 1000).toISOString(),
    ...(task.pullStartedAt ? { pullStartedAt: new Date(task.pullStartedAt * 1000).toISOString() } : {}),
    ...(task.pullStoppedAt ? { pullStoppedAt: new Date(task.pullStoppedAt * 1000).toISOString() } : {}),
    ...(task.startedAt ? { startedAt: new Date(task.startedAt * 1000).toISOString() } : {}),
    ...(task.stoppedAt ? { stoppedAt: new Date(task.stoppedAt * 1000).toISOString() } : {}),
  };
};

/**
 * The plans a deployer sets with the context key `plans` (env PLANS), made roomy as in every other
 * suite (test/fixtures/plans/roomy.json): flows that start several sandboxes for one organization or
 * ask for a resource factor never meet the built-in `free` plan's limits (test/integration/plans.test.ts
 * tests those). A `mutate` may set its own.
 */
function roomyPlans(template: Template): void {
  const plans = JSON.stringify(JSON.parse(readFileSync(ROOMY_PLANS, 'utf8')));
  for (const r of Object.values(template.Resources) as { Type: string; Properties?: any }[]) {
    const vars = r.Type === 'AWS::Lambda::Function' ? r.Properties?.Environment?.Variables : undefined;
    if (vars && 'PLANS' in vars) vars.PLANS = plans;
  }
}

export async function startTier(
  options: {
    mutate?: (template: Template) => void;
    /** The fake ECS's start delays per task (test/tier/aws.ts `estimatedStartDelays`); none by default. */
    startDelays?: () => StartDelays;
    /**
     * URLs of outside services in the functions' environment and where the tier serves them (a platform
     * model's upstream `base_url` inside PLATFORM_LLMS: the scripted upstream on loopback).
     */
    outside?: [from: string, to: string][];
  } = {},
): Promise<TierStack> {
  if (!existsSync(join(CDK_OUT, 'manifest.json')))
    throw new Error('cdk.out is missing: run `npm run synth` first (npm test does)');
  const template = loadTemplate();
  roomyPlans(template);
  options.mutate?.(template);
  const resolved = resolveTemplate(template);
  const outputs = Object.fromEntries(
    Object.entries(resolved.Outputs ?? {}).map(([k, v]: [string, any]) => [k, String(v.Value)]),
  );
  const workDir = mkdtempSync(join(tmpdir(), 'acs-tier-'));
  const policies = rolePolicies(resolved);
  useKeyPolicies(
    ofType(resolved, 'AWS::KMS::Key').map(([id, r]) => ({
      arn: names(STACK, id, r).atts.Arn!,
      policy: r.Properties.KeyPolicy,
    })),
  );
  let dynamo: EmbeddedDynamo | undefined;
  let bus: EventBus | undefined;
  let front: CloudFrontEmulator | undefined;
  let bridge: WebSocketApiEmulator | undefined;
  let cognito: TierStack['cognito'] | undefined;
  try {
    dynamo = await startDynalite();
    const ttl = await createTables(resolved, dynamo.endpoint);
    const aws = new FakeAws({
      resolved,
      policies,
      dynaliteEndpoint: dynamo.endpoint,
      workDir,
      sandboxProgram: await buildSandboxProgram(workDir),
      ...(options.startDelays ? { startDelays: options.startDelays } : {}),
      onTaskChange: (task) => bus?.put('ECS Task State Change', 'aws.ecs', taskStateEvent(task), [task.taskArn]),
      // The sandbox reaches the service at its public (CloudFront) URL.
      publicUrl: (url) =>
        front && url.startsWith(`https://${front.domainName}`)
          ? `${front.url}${url.slice(`https://${front.domainName}`.length)}`
          : undefined,
      // ...and the bridge socket at its emulation (the WebSocket API has no TLS here either).
      bridgeSocketUrl: (url) => {
        const host = bridge && `wss://${bridge.apiId}.execute-api.${REGION}.amazonaws.com`;
        return host && url.startsWith(host) ? `${bridge!.url}${url.slice(host.length)}` : undefined;
      },
    });
    await aws.start();
    const endpoints = Object.fromEntries(
      ['', '_DYNAMODB', '_KMS', '_ECS', '_S3'].map((s) => [`AWS_ENDPOINT_URL${s}`, aws.url]),
    );
    // A WebSocket API's @connections endpoint (a function's callback URL) is served by the fake AWS side.
    const socketApis = ofType(resolved, 'AWS::ApiGatewayV2::Api')
      .filter(([, r]) => r.Properties.ProtocolType === 'WEBSOCKET')
      .map(([id, r]) => names(STACK, id, r).ref);
    const callbackUrl = (value: string) => {
      const m = /^https:\/\/([a-z0-9]+)\.execute-api\.[^/]+(\/.*)?$/.exec(value);
      return m && socketApis.includes(m[1]!) ? `${aws.url}/execute-api/${m[1]}${m[2] ?? ''}` : value;
    };
    // The user pool's issuer: Cognito's endpoints, faked at their HTTP boundary (there is no TLS here either).
    const [poolId] = ofType(resolved, 'AWS::Cognito::UserPool').map(([id, r]) => names(STACK, id, r).ref);
    const [clientId] = ofType(resolved, 'AWS::Cognito::UserPoolClient').map(([id, r]) => names(STACK, id, r).ref);
    if (!poolId || !clientId)
      throw new Error('No Cognito user pool and client in the template (context cognito: true)');
    cognito = Object.assign(await startTestIssuer({ path: poolId }), { clientId });
    const cognitoIssuer = `https://cognito-idp.${REGION}.amazonaws.com/${poolId}`;
    const outside = (value: string) => (options.outside ?? []).reduce((v, [from, to]) => v.replaceAll(from, to), value);
    const rewrite = (value: string) => (value === cognitoIssuer ? cognito!.issuer : callbackUrl(outside(value)));
    const functions = functionsOf(template, resolved).map((f) => ({
      ...f,
      environment: Object.fromEntries(Object.entries(f.environment).map(([k, v]) => [k, rewrite(String(v))])),
    }));
    const lambda = new LambdaService(functions, resolved, {
      endpoints,
      accessKeyFor: (role) => aws.accessKeyFor(role),
    });
    aws.invoker = (arn, payload) => lambda.invoke(arn, payload);
    bus = new EventBus(resolved, lambda, policies);
    const api = new HttpApiEmulator(resolved, lambda);
    await api.start();
    // Every WebSocket API of the template: the event stream's and the bridge socket (infra/constructs/bridge-socket.ts).
    const wsIds = ofType(resolved, 'AWS::ApiGatewayV2::Api')
      .filter(([, r]) => r.Properties.ProtocolType === 'WEBSOCKET')
      .map(([id]) => id);
    const webSockets = wsIds.map((id) => new WebSocketApiEmulator(resolved, lambda, { apiLogicalId: id }));
    for (const ws of webSockets) {
      await ws.start();
      aws.webSocketApis.push(ws);
    }
    const sockets = webSockets.find((ws) => ws.stage === STREAM_STAGE);
    if (!sockets) throw new Error(`No WebSocket API with the stream's stage ${STREAM_STAGE}`);
    bridge = webSockets[wsIds.findIndex((id) => id.startsWith('BridgeSocket'))];
    if (!bridge) throw new Error('No bridge socket WebSocket API in the template');
    const bridgeSocket = bridge;
    const functionUrls = new FunctionUrlEmulator(resolved, lambda);
    await functionUrls.start();
    front = new CloudFrontEmulator(
      resolved,
      new Map([
        [`${api.apiId}.execute-api.${REGION}.amazonaws.com`, api.url],
        ...functionUrls.urls.map((u) => [u.domain, functionUrls.url] as [string, string]),
        ...webSockets.map(
          (ws) =>
            [`${ws.apiId}.execute-api.${REGION}.amazonaws.com`, ws.url.replace(/^ws:/, 'http:')] as [string, string],
        ),
      ]),
    );
    await front.start();
    const cdn = front;
    const dyn = dynamo;
    const call = apiCaller(api.url, null);
    const idp = cognito;
    return {
      url: api.url,
      template,
      resolved,
      outputs,
      api,
      sockets,
      bridgeSocket,
      webSockets,
      front: cdn,
      functionUrls,
      aws,
      cognito: idp,
      lambda,
      bus,
      ttl,
      call,
      keys: (args) =>
        new Promise((resolve) => {
          const child = spawn('npm', ['run', '--silent', 'keys', '--', ...args, '--aws'], {
            cwd: REPO_ROOT,
            env: {
              PATH: process.env.PATH,
              HOME: workDir,
              TABLE_KEYS: outputs.KeysTableName!,
              // `create --org`: the new user joins that organization (docs/deploy.md).
              TABLE_USERS: outputs.UsersTableName!,
              TABLE_ORGS: outputs.OrgsTableName!,
              TABLE_AUDIT_LOG: outputs.AuditLogTableName!,
              AWS_REGION: REGION,
              AWS_ACCESS_KEY_ID: OPERATOR_KEY,
              AWS_SECRET_ACCESS_KEY: 'operator-secret',
              AWS_ENDPOINT_URL_DYNAMODB: aws.url,
              AWS_EC2_METADATA_DISABLED: 'true',
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (c) => (stdout += c));
          child.stderr.on('data', (c) => (stderr += c));
          child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }));
        }),
      sandboxKey: async (sandboxId) => {
        const operator = {
          region: REGION,
          endpoint: aws.url,
          credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'operator-secret' },
        };
        const item = await new DynamoDBClient(operator).send(
          new GetItemCommand({ TableName: outputs.SandboxesTableName!, Key: { id: { S: sandboxId } } }),
        );
        const sealed = item.Item?.sessionKeySealed?.S;
        return sealed
          ? new KmsSealer(outputs.SecretsKeyId!, new KMSClient(operator)).open(sealed, item.Item!.userId!.S!)
          : null;
      },
      explain: () => {
        const failed = api.records.filter((r) => r.status >= 500).slice(-5);
        const denied = aws.denials
          .slice(-5)
          .map((d) => `denied ${d.request.action} on ${d.request.resource} to ${d.principal}`);
        const logs = [...new Set(failed.map((r) => r.functionArn).filter(Boolean))].map(
          (arn) => `--- ${arn}\n${lambda.logsOf(arn!).slice(-3000)}`,
        );
        return [
          ...failed.map((r) => `${r.method} ${r.path} -> ${r.status} (${r.routeKey}): ${r.error ?? ''}`),
          ...denied,
          ...logs,
        ].join('\n');
      },
      stop: async () => {
        await cdn.close();
        await functionUrls.close();
        for (const ws of webSockets) await ws.close();
        await api.close();
        await lambda.close();
        await aws.close();
        await idp.close();
        await dyn.close();
        rmSync(workDir, { recursive: true, force: true });
        // Every IAM decision this stack made, asked again of AWS's authorization data (test/tier/iam-crosscheck.ts).
        const findings = await crossCheckFindings();
        if (findings.length)
          throw new Error(
            `The tier's IAM evaluator and iam-simulate disagree (test/tier/iam-crosscheck.ts):\n${describeFindings(findings)}`,
          );
      },
    };
  } catch (err) {
    await cognito?.close();
    await dynamo?.close();
    rmSync(workDir, { recursive: true, force: true });
    throw err;
  }
}
