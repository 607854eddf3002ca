import { spawn, type ChildProcess } from 'node:child_process';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { deniedMessage, evaluate, type AuthzRequest, type Statement } from '#test/tier/iam.ts';
import type { InvokeResult } from '#test/tier/lambda.ts';
import type { WebSocketApiEmulator } from '#test/tier/websocket-api.ts';
import { ACCOUNT, names, ofType, REGION, STACK, type Template } from '#test/tier/template.ts';

/**
 * The AWS APIs the functions call, on one loopback HTTP server: DynamoDB (a proxy in front of
 * dynalite), KMS, ECS and S3 (the workspace bucket, in memory). Every call is signed by a function with an access key id that names
 * its role; before doing anything the server asks the IAM evaluator (test/tier/iam.ts) whether that
 * role may, with the actions, resources and condition keys AWS would check for the operation
 * (the `authz` table below, tag-on-create and iam:PassRole included). A denial answers with AWS's
 * AccessDeniedException and is recorded in `denials`. Signatures themselves are not verified.
 *
 * The fake ECS runs tasks for real: a task of a sandbox task definition is the sandbox program
 * (built from sandbox/ like the image) in a child process, with the task's container environment
 * and a disk of its own (its workspace comes from S3 snapshots, through the bridge's presigned requests). Its state changes go to `onTaskChange`, which the
 * tier turns into EventBridge "ECS Task State Change" events.
 */

export const OPERATOR_KEY = 'TIER_operator';

export interface Denial {
  principal: string;
  operation: string;
  request: AuthzRequest;
}

export interface EcsTask {
  taskArn: string;
  clusterArn: string;
  taskDefinitionArn: string;
  group?: string;
  startedBy?: string;
  lastStatus: string;
  desiredStatus: string;
  overrides?: any;
  containers: { name: string; lastStatus: string; exitCode?: number; reason?: string }[];
  tags?: { key: string; value: string }[];
  stopCode?: string;
  stoppedReason?: string;
  createdAt: number;
  /** When the image pull began and ended (with start delays). */
  pullStartedAt?: number;
  pullStoppedAt?: number;
  /** When the container started (RUNNING). */
  startedAt?: number;
  stoppedAt?: number;
  capacityProviderName?: string;
  version: number;
}

class AwsError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const camel = (v: any): any =>
  Array.isArray(v)
    ? v.map(camel)
    : v && typeof v === 'object'
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k[0]!.toLowerCase() + k.slice(1), camel(x)]))
      : v;

const arn = (service: string, rest: string) => `arn:aws:${service}:${REGION}:${ACCOUNT}:${rest}`;
const tagContext = (tags: { key?: string; value?: string; Key?: string; Value?: string }[]) => ({
  'aws:TagKeys': tags.map((t) => t.key ?? t.Key ?? ''),
  ...Object.fromEntries(tags.map((t) => [`aws:RequestTag/${t.key ?? t.Key}`, t.value ?? t.Value ?? ''])),
});

export interface FakeAwsOptions {
  resolved: Template;
  policies: Map<string, Statement[]>;
  dynaliteEndpoint: string;
  workDir: string;
  /** The sandbox program (the image's /app/main.mjs, built by the tier). */
  sandboxProgram: string;
  onTaskChange(task: EcsTask): void;
  /** Where the tier serves the bridge socket whose public URL is given (none: the program long-polls). */
  bridgeSocketUrl?(url: string): string | undefined;
  /** Where a public URL (the service's CloudFront host) is served in the tier, for the sandbox's BRIDGE_URL. */
  publicUrl?(url: string): string | undefined;
  /** How long each new task stays PROVISIONING and then PENDING (the pull) before its container starts; none by default. */
  startDelays?: () => StartDelays;
}

/** One task's emulated start: PROVISIONING (capacity, the network interface), then PENDING (the image pull). */
export interface StartDelays {
  provisioningMs: number;
  pendingMs: number;
}

/**
 * Fargate's start for our image as docs/performance.md estimates it ("Fargate on paper"):
 * PROVISIONING 5-15 s, PENDING (pull and container start) 8-20 s, each uniform, scaled by `scale`
 * (the tests use a tenth, so a cold start costs seconds, not half a minute, and keeps its shape).
 */
export function estimatedStartDelays(scale = 1, random: () => number = Math.random): () => StartDelays {
  const between = (lo: number, hi: number) => Math.round((lo + (hi - lo) * random()) * 1000 * scale);
  return () => ({ provisioningMs: between(5, 15), pendingMs: between(8, 20) });
}

export class FakeAws {
  readonly denials: Denial[] = [];
  /** Every call: principal, operation, allowed. */
  readonly calls: { principal: string; operation: string; allowed: boolean }[] = [];
  readonly tasks = new Map<string, EcsTask>();
  private readonly processes = new Map<
    string,
    { child: ChildProcess; stopRequested: boolean; interrupted: boolean; exited: Promise<void> }
  >();
  private readonly taskDefinitions = new Map<string, any>();
  private readonly clusters = new Map<string, string>();
  private readonly kmsKeys = new Map<string, Buffer>();
  /** SSM parameters and Secrets Manager secrets by ARN (the platform's LLM keys): set by the tests. */
  readonly keyValues = new Map<string, string>();
  /** S3 buckets of the template by name: key -> object. */
  private readonly buckets = new Map<string, Map<string, { body: Buffer; modified: Date }>>();
  private readonly keyRoles = new Map<string, string>();
  private server!: Server;
  private readonly pending = new Set<Promise<unknown>>();
  url = '';
  /** The tier's Lambda service, for the Invoke API (set once it exists: it needs this server's URL). */
  invoker?: (functionArn: string, payload: unknown) => Promise<InvokeResult>;
  /** The WebSocket APIs whose @connections this serves. */
  readonly webSocketApis: Pick<WebSocketApiEmulator, 'apiId' | 'stage' | 'manage'>[] = [];
  /** Every event put on a bus through PutEvents (the usage notices), in order. */
  readonly busEvents: { id: string; bus: string; source: string; detailType: string; detail: any }[] = [];
  /** Every `Event` invocation through the Invoke API, with its result (Lambda's retries are not emulated). */
  readonly asyncInvocations: { functionArn: string; payload: unknown; result: InvokeResult }[] = [];
  /** Step Functions executions by ARN: their input, status and each Task's result. */
  readonly executions = new Map<
    string,
    { stateMachineArn: string; input: unknown; status: 'RUNNING' | 'SUCCEEDED' | 'FAILED'; results: InvokeResult[] }
  >();
  /** The template's state machines by ARN: definition and role. */
  private readonly stateMachines = new Map<string, { definition: any; roleArn: string }>();

  constructor(private readonly options: FakeAwsOptions) {
    const { resolved } = options;
    for (const roleArn of options.policies.keys()) this.keyRoles.set(`TIER_${roleArn.split('/').pop()}`, roleArn);
    // Names as test/tier/template.ts gives them (`names` takes the unresolved resource: only its type matters here).
    const named = (type: string) => ofType(resolved, type).map(([id, r]) => names(STACK, id, r));
    for (const c of named('AWS::ECS::Cluster')) this.clusters.set(c.ref, c.atts.Arn!);
    for (const [, r] of ofType(resolved, 'AWS::ECS::TaskDefinition')) {
      const p = camel(r.Properties);
      const taskDefinitionArn = arn('ecs', `task-definition/${p.family}:1`);
      this.taskDefinitions.set(taskDefinitionArn, {
        ...p,
        taskDefinitionArn,
        revision: 1,
        status: 'ACTIVE',
        tags: undefined,
      });
    }
    for (const k of named('AWS::KMS::Key')) this.kmsKeys.set(k.atts.Arn!, randomBytes(32));
    for (const [id, r] of ofType(resolved, 'AWS::StepFunctions::StateMachine'))
      this.stateMachines.set(names(STACK, id, r).ref, {
        definition: JSON.parse(r.Properties.DefinitionString),
        roleArn: r.Properties.RoleArn,
      });
    for (const b of named('AWS::S3::Bucket')) this.buckets.set(b.ref, new Map());
  }

  /** The access key id a role's functions sign with. */
  accessKeyFor(roleArn: string): string {
    const key = `TIER_${roleArn.split('/').pop()}`;
    if (!this.keyRoles.has(key)) throw new Error(`No role ${roleArn} in the template`);
    return key;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const p of this.processes.values()) p.child.kill('SIGKILL');
    await Promise.all([...this.processes.values()].map((p) => p.exited));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const target = String(req.headers['x-amz-target'] ?? '');
    if (!target && this.s3Bucket(new URL(req.url ?? '/', 'http://s3').pathname)) return this.s3(req, raw, res);
    const json = target.length > 0;
    try {
      const keyId = /Credential=([^/,\s]+)\//.exec(String(req.headers.authorization ?? ''))?.[1] ?? '';
      const principal = keyId === OPERATOR_KEY ? 'operator' : this.keyRoles.get(keyId);
      if (!principal)
        throw new AwsError('UnrecognizedClientException', 'The security token included in the request is invalid.');
      const body = raw.length && json ? JSON.parse(raw.toString('utf8')) : {};
      const [prefix, op] = target.split('.');
      const check = (operation: string, requests: AuthzRequest[]) => this.authorize(principal, operation, requests);
      if (prefix === 'DynamoDB_20120810') {
        check(`dynamodb:${op}`, dynamoAuthz(op!, body));
        return await this.forwardToDynalite(req, raw, res);
      }
      let out: unknown;
      if (prefix === 'TrentService') out = this.kms(op!, body, check);
      else if (prefix === 'AmazonEC2ContainerServiceV20141113') out = this.ecs(op!, body, check);
      else if (prefix === 'AWSEvents') out = this.putEvents(op!, body, check);
      else if (prefix === 'AmazonSSM' || prefix === 'secretsmanager') out = this.keyRead(prefix, op!, body, check);
      else if (prefix === 'AWSStepFunctions') out = this.startExecution(op!, body, check);
      else if (req.url?.startsWith('/2015-03-31/functions/')) {
        const r = await this.lambdaInvoke(req, raw, check);
        return void res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.body ?? '');
      } else if (req.url?.startsWith('/execute-api/')) {
        const r = await this.connections(req, raw, check);
        return void res
          .writeHead(r.status, {
            'content-type': 'application/json',
            ...(r.status === 410
              ? { 'x-amzn-errortype': 'GoneException' }
              : r.status === 413
                ? { 'x-amzn-errortype': 'PayloadTooLargeException' }
                : {}),
          })
          .end(r.body ?? '');
      } else throw new AwsError('UnknownOperationException', `The tier fakes no ${target || req.url}`);
      res
        .writeHead(200, { 'content-type': json ? 'application/x-amz-json-1.1' : 'application/json' })
        .end(JSON.stringify(out ?? {}));
    } catch (err) {
      const e = err instanceof AwsError ? err : new AwsError('InternalFailure', (err as Error).message, 500);
      const body = json
        ? { __type: e.type, message: e.message, Message: e.message }
        : { ErrorCode: e.type, Message: e.message };
      res
        .writeHead(e.status, { 'content-type': 'application/json', 'x-amzn-errortype': e.type })
        .end(JSON.stringify(body));
    }
  }

  /**
   * EventBridge's PutEvents (the usage notices' bus): `events:PutEvents` on each entry's bus ARN (a name
   * is the account's bus of that name), recorded in `busEvents`; no rule delivers them on.
   */
  private putEvents(op: string, body: any, check: (operation: string, requests: AuthzRequest[]) => void) {
    if (op !== 'PutEvents') throw new AwsError('UnknownOperationException', `The tier fakes no AWSEvents.${op}`);
    const entries = (body.Entries ?? []) as {
      EventBusName?: string;
      Source: string;
      DetailType: string;
      Detail: string;
    }[];
    const busArn = (name = 'default') => (name.startsWith('arn:') ? name : arn('events', `event-bus/${name}`));
    check(
      'events:PutEvents',
      entries.map((e) => ({ action: 'events:PutEvents', resource: busArn(e.EventBusName) })),
    );
    const ids = entries.map((e) => {
      const id = randomBytes(8).toString('hex');
      this.busEvents.push({
        id,
        bus: busArn(e.EventBusName),
        source: e.Source,
        detailType: e.DetailType,
        detail: JSON.parse(e.Detail),
      });
      return { EventId: id };
    });
    return { FailedEntryCount: 0, Entries: ids };
  }

  /**
   * SSM Parameter Store's GetParameter and Secrets Manager's GetSecretValue (the LLM gateway's upstream
   * keys, by ARN): `ssm:GetParameter` on `arn:aws:ssm:<region>:<account>:parameter/<name>`,
   * `secretsmanager:GetSecretValue` on the secret's ARN; the values are what a test put in `keyValues`.
   */
  private keyRead(prefix: string, op: string, body: any, check: (operation: string, requests: AuthzRequest[]) => void) {
    if (prefix === 'AmazonSSM') {
      if (op !== 'GetParameter') throw new AwsError('UnknownOperationException', `The tier fakes no AmazonSSM.${op}`);
      const name = String(body.Name ?? '');
      const resource = name.startsWith('arn:') ? name : arn('ssm', `parameter/${name.replace(/^\//, '')}`);
      check('ssm:GetParameter', [{ action: 'ssm:GetParameter', resource }]);
      const value = this.keyValues.get(resource);
      if (value === undefined) throw new AwsError('ParameterNotFound', `Parameter ${name} not found.`);
      return {
        Parameter: {
          Name: name,
          Type: 'SecureString',
          Value: body.WithDecryption ? value : 'AQICAH-sealed',
          Version: 1,
          ARN: resource,
        },
      };
    }
    if (op !== 'GetSecretValue')
      throw new AwsError('UnknownOperationException', `The tier fakes no secretsmanager.${op}`);
    const id = String(body.SecretId ?? '');
    check('secretsmanager:GetSecretValue', [{ action: 'secretsmanager:GetSecretValue', resource: id }]);
    const value = this.keyValues.get(id);
    if (value === undefined)
      throw new AwsError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return { ARN: id, Name: id.split(':').pop(), SecretString: value, VersionId: 'tier-1' };
  }

  /**
   * Step Functions' StartExecution (`states:StartExecution` on the state machine's ARN) of a template's
   * state machine; the execution runs on its own: `Wait` states for their `Seconds`, `Task` states whose
   * `Resource` is a Lambda ARN invoked as the state machine's role (its trust of states.amazonaws.com and
   * `lambda:InvokeFunction` checked; a denial fails the execution and is recorded), with `Retry` not
   * emulated. Any other state type fails the execution. A name already used answers its execution
   * again for the same input (ExecutionAlreadyExists otherwise), as Standard workflows do.
   */
  private startExecution(op: string, body: any, check: (operation: string, requests: AuthzRequest[]) => void) {
    if (op !== 'StartExecution')
      throw new AwsError('UnknownOperationException', `The tier fakes no AWSStepFunctions.${op}`);
    const stateMachineArn = String(body.stateMachineArn ?? '');
    check('states:StartExecution', [{ action: 'states:StartExecution', resource: stateMachineArn }]);
    const machine = this.stateMachines.get(stateMachineArn);
    if (!machine) throw new AwsError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${stateMachineArn}'`);
    const name = String(body.name ?? randomBytes(16).toString('hex'));
    const executionArn = `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
    const input = JSON.parse(String(body.input ?? '{}'));
    const seen = this.executions.get(executionArn);
    if (seen) {
      if (JSON.stringify(seen.input) !== JSON.stringify(input))
        throw new AwsError('ExecutionAlreadyExists', `Execution Already Exists: '${executionArn}'`);
      return { executionArn, startDate: Date.now() / 1000 };
    }
    const execution = {
      stateMachineArn,
      input,
      status: 'RUNNING' as 'RUNNING' | 'SUCCEEDED' | 'FAILED',
      results: [] as InvokeResult[],
    };
    this.executions.set(executionArn, execution);
    const run = this.runExecution(machine, execution).catch(() => {
      execution.status = 'FAILED';
    });
    this.pending.add(run);
    void run.finally(() => this.pending.delete(run));
    return { executionArn, startDate: Date.now() / 1000 };
  }

  private async runExecution(
    machine: { definition: any; roleArn: string },
    execution: { input: unknown; status: string; results: InvokeResult[] },
  ): Promise<void> {
    const roleId = machine.roleArn.split('/').pop()!;
    const trust = this.options.resolved.Resources[roleId]?.Properties?.AssumeRolePolicyDocument?.Statement ?? [];
    const trusted = trust.some(
      (t: any) => t.Effect === 'Allow' && [t.Principal?.Service].flat().includes('states.amazonaws.com'),
    );
    let data: unknown = execution.input;
    let name: string | undefined = machine.definition.StartAt;
    for (let steps = 0; name; steps++) {
      const state = machine.definition.States?.[name];
      if (!state || steps > 50) throw new Error(`The tier's Step Functions found no state ${name}`);
      if (state.Type === 'Wait') await new Promise((r) => setTimeout(r, Number(state.Seconds) * 1000));
      else if (state.Type === 'Task') {
        if (!trusted) throw new Error(`Role ${machine.roleArn} does not trust states.amazonaws.com`);
        this.authorize(machine.roleArn, 'lambda:InvokeFunction', [
          { action: 'lambda:InvokeFunction', resource: state.Resource },
        ]);
        const result = await this.invoker!(state.Resource, data);
        execution.results.push(result);
        if (!result.ok) throw new Error(result.error?.errorMessage);
        data = result.result;
      } else throw new Error(`The tier's Step Functions runs no ${state.Type} state`);
      name = state.End ? undefined : state.Next;
    }
    execution.status = 'SUCCEEDED';
  }

  /** Sends a signal to a running task's process (a test's frozen standby: SIGSTOP, then SIGCONT). */
  signalTask(taskArn: string, signal: NodeJS.Signals): void {
    this.processes.get(taskArn)?.child.kill(signal);
  }

  /**
   * Fargate Spot takes a running task's capacity back: SIGTERM (the two minutes' notice), and once the
   * program exits the task stops with `SpotInterruption`, as ECS reports it.
   */
  interruptTask(taskArn: string): void {
    const task = this.tasks.get(taskArn);
    const p = this.processes.get(taskArn);
    if (!task || !p) throw new Error(`No running task ${taskArn}`);
    task.desiredStatus = 'STOPPED';
    task.stoppedReason = 'Your Spot Task was interrupted.';
    p.interrupted = true;
    p.child.kill('SIGTERM');
  }

  /** Throws AccessDeniedException unless every request is allowed for the principal. */
  private authorize(principal: string, operation: string, requests: AuthzRequest[]): void {
    for (const request of requests) {
      const allowed = principal === 'operator' || evaluate(this.options.policies.get(principal) ?? [], request).allowed;
      this.calls.push({ principal, operation, allowed });
      if (!allowed) {
        this.denials.push({ principal, operation, request });
        throw new AwsError('AccessDeniedException', deniedMessage(principal, request));
      }
    }
  }

  private forwardToDynalite(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    return new Promise((resolve, reject) => {
      // The embedded dynalite listens on a unix socket (`unix:<path>`), as under `npm start`.
      const endpoint = this.options.dynaliteEndpoint;
      const target = endpoint.startsWith('unix:')
        ? { socketPath: endpoint.slice('unix:'.length), headers: { ...req.headers, host: 'localhost' } }
        : {
            host: new URL(endpoint).hostname,
            port: new URL(endpoint).port,
            headers: { ...req.headers, host: new URL(endpoint).host },
          };
      const out = httpRequest({ ...target, method: req.method, path: req.url }, (r) => {
        res.writeHead(r.statusCode ?? 500, r.headers);
        r.pipe(res);
        r.on('end', resolve);
      });
      out.on('error', reject);
      out.end(body);
    });
  }

  // ---- Lambda's Invoke API: the function's ARN checked against lambda:InvokeFunction, then run by
  // the tier's Lambda service; an `Event` invocation answers 202 at once and runs on its own.
  private async lambdaInvoke(
    req: IncomingMessage,
    raw: Buffer,
    check: (op: string, r: AuthzRequest[]) => void,
  ): Promise<{ status: number; body?: string }> {
    const m = /^\/2015-03-31\/functions\/([^/]+)\/invocations/.exec(req.url!);
    const ref = decodeURIComponent(m?.[1] ?? '');
    const functionArn = ref.startsWith('arn:') ? ref.replace(/:(\$LATEST|\d+)$/, '') : arn('lambda', `function:${ref}`);
    check('lambda:InvokeFunction', [{ action: 'lambda:InvokeFunction', resource: functionArn }]);
    const invoke = this.invoker;
    if (!invoke) throw new AwsError('ServiceException', 'The tier has no Lambda service attached');
    const payload = raw.length ? (JSON.parse(raw.toString('utf8')) as unknown) : {};
    if (String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse') === 'Event') {
      const run = invoke(functionArn, payload).then((result) => {
        this.asyncInvocations.push({ functionArn, payload, result });
      });
      this.pending.add(run);
      void run.finally(() => this.pending.delete(run));
      return { status: 202 };
    }
    const result = await invoke(functionArn, payload);
    return { status: 200, body: JSON.stringify(result.ok ? result.result : result.error) };
  }

  /** Waits for every asynchronous invocation under way. */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  // ---- API Gateway's @connections management API of a WebSocket API, at
  // `/execute-api/<api id>/<stage>/@connections/<id>` (the tier points the function's callback URL here).
  private async connections(
    req: IncomingMessage,
    raw: Buffer,
    check: (op: string, r: AuthzRequest[]) => void,
  ): Promise<{ status: number; body?: string }> {
    const m = /^\/execute-api\/([^/]+)\/([^/]+)\/@connections\/([^/?]+)/.exec(req.url!);
    if (!m) throw new AwsError('NotFoundException', `No @connections path: ${req.url}`, 404);
    const [, apiId, stage, connectionId] = m as unknown as [string, string, string, string];
    const id = decodeURIComponent(connectionId);
    check('execute-api:ManageConnections', [
      {
        action: 'execute-api:ManageConnections',
        resource: `arn:aws:execute-api:${REGION}:${ACCOUNT}:${apiId}/${stage}/${req.method}/@connections/${id}`,
      },
    ]);
    const api = this.webSocketApis.find((a) => a.apiId === apiId && a.stage === stage);
    if (!api) throw new AwsError('NotFoundException', `No WebSocket API ${apiId} stage ${stage}`, 404);
    return api.manage(req.method!, id, raw);
  }

  // ---- KMS: AES-256-GCM under a per-key secret, the key ARN and encryption context bound in.
  private kms(op: string, body: any, check: (op: string, r: AuthzRequest[]) => void): unknown {
    const resolveKey = (id: string | undefined) => {
      const found = [...this.kmsKeys.keys()].find((k) => id && (k === id || k.endsWith(`/${id}`)));
      if (!found) throw new AwsError('NotFoundException', `Key '${id}' does not exist`);
      return found;
    };
    const aad = (ctx: Record<string, string> | undefined) =>
      Buffer.from(JSON.stringify(Object.entries(ctx ?? {}).sort()));
    const encrypt = (keyArn: string, plaintext: Buffer, ctx: Record<string, string> | undefined) => {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', this.kmsKeys.get(keyArn)!, iv).setAAD(aad(ctx));
      const ct = Buffer.concat([c.update(plaintext), c.final()]);
      const head = Buffer.from(keyArn);
      return Buffer.concat([Buffer.from([head.length]), head, iv, c.getAuthTag(), ct]).toString('base64');
    };
    switch (op) {
      case 'Encrypt': {
        const keyArn = resolveKey(body.KeyId);
        check('kms:Encrypt', [
          { action: 'kms:Encrypt', resource: keyArn, context: encryptionContext(body.EncryptionContext) },
        ]);
        return {
          CiphertextBlob: encrypt(keyArn, Buffer.from(body.Plaintext, 'base64'), body.EncryptionContext),
          KeyId: keyArn,
          EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
        };
      }
      case 'GenerateDataKey': {
        const keyArn = resolveKey(body.KeyId);
        check('kms:GenerateDataKey', [
          { action: 'kms:GenerateDataKey', resource: keyArn, context: encryptionContext(body.EncryptionContext) },
        ]);
        const plain = randomBytes(body.NumberOfBytes ?? (body.KeySpec === 'AES_128' ? 16 : 32));
        return {
          CiphertextBlob: encrypt(keyArn, plain, body.EncryptionContext),
          Plaintext: plain.toString('base64'),
          KeyId: keyArn,
        };
      }
      case 'Decrypt': {
        const blob = Buffer.from(body.CiphertextBlob, 'base64');
        const keyArn = blob.subarray(1, 1 + blob[0]!).toString();
        if (!this.kmsKeys.has(keyArn)) throw new AwsError('InvalidCiphertextException', '');
        if (body.KeyId && resolveKey(body.KeyId) !== keyArn)
          throw new AwsError(
            'IncorrectKeyException',
            'The key ID in the request does not identify a CMK that can perform this operation.',
          );
        check('kms:Decrypt', [
          { action: 'kms:Decrypt', resource: keyArn, context: encryptionContext(body.EncryptionContext) },
        ]);
        const rest = blob.subarray(1 + blob[0]!);
        try {
          const d = createDecipheriv('aes-256-gcm', this.kmsKeys.get(keyArn)!, rest.subarray(0, 12)).setAAD(
            aad(body.EncryptionContext),
          );
          d.setAuthTag(rest.subarray(12, 28));
          return {
            Plaintext: Buffer.concat([d.update(rest.subarray(28)), d.final()]).toString('base64'),
            KeyId: keyArn,
            EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
          };
        } catch {
          throw new AwsError('InvalidCiphertextException', '');
        }
      }
      default:
        throw new AwsError('UnknownOperationException', `The tier's KMS fakes no ${op}`);
    }
  }

  // ---- ECS
  private clusterArn(cluster: string | undefined): string {
    const name = (cluster ?? 'default').split('/').pop()!;
    const found = this.clusters.get(name);
    if (!found) throw new AwsError('ClusterNotFoundException', 'Cluster not found.');
    return found;
  }

  private taskDefinition(ref: string): any {
    const direct = this.taskDefinitions.get(ref) ?? this.taskDefinitions.get(arn('ecs', `task-definition/${ref}`));
    if (direct) return direct;
    const family = ref.split('/').pop()!.split(':')[0];
    const latest = [...this.taskDefinitions.values()]
      .filter((t) => t.family === family && t.status === 'ACTIVE')
      .sort((a, b) => b.revision - a.revision)[0];
    if (!latest || ref.includes(':')) throw new AwsError('ClientException', 'Unable to describe task definition.');
    return latest;
  }

  private ecs(op: string, body: any, check: (op: string, r: AuthzRequest[]) => void): unknown {
    const passRoles = (roles: (string | undefined)[]) =>
      roles.filter(Boolean).map((r) => ({
        action: 'iam:PassRole',
        resource: r!,
        context: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' },
      }));
    switch (op) {
      case 'DescribeTaskDefinition': {
        check('ecs:DescribeTaskDefinition', [{ action: 'ecs:DescribeTaskDefinition', resource: '*' }]);
        const td = this.taskDefinition(body.taskDefinition);
        return {
          taskDefinition: { ...td, tags: undefined },
          tags: body.include?.includes('TAGS') ? (td.tags ?? []) : undefined,
        };
      }
      case 'RegisterTaskDefinition': {
        const revision =
          1 +
          Math.max(
            0,
            ...[...this.taskDefinitions.values()].filter((t) => t.family === body.family).map((t) => t.revision),
          );
        const taskDefinitionArn = arn('ecs', `task-definition/${body.family}:${revision}`);
        check('ecs:RegisterTaskDefinition', [
          { action: 'ecs:RegisterTaskDefinition', resource: '*', context: tagContext(body.tags ?? []) },
          // Tag-on-create: tags in the request need TagResource on the new revision.
          ...(body.tags?.length
            ? [
                {
                  action: 'ecs:TagResource',
                  resource: taskDefinitionArn,
                  context: { 'ecs:CreateAction': 'RegisterTaskDefinition', ...tagContext(body.tags) },
                },
              ]
            : []),
          ...passRoles([body.taskRoleArn, body.executionRoleArn]),
        ]);
        const td = { ...body, taskDefinitionArn, revision, status: 'ACTIVE', registeredAt: Date.now() / 1000 };
        this.taskDefinitions.set(taskDefinitionArn, td);
        return { taskDefinition: { ...td, tags: undefined }, tags: body.tags };
      }
      case 'DeregisterTaskDefinition': {
        check('ecs:DeregisterTaskDefinition', [{ action: 'ecs:DeregisterTaskDefinition', resource: '*' }]);
        const td = this.taskDefinition(body.taskDefinition);
        td.status = 'INACTIVE';
        return { taskDefinition: td };
      }
      case 'RunTask':
        return this.runTask(body, check, passRoles);
      case 'StopTask': {
        const clusterArn = this.clusterArn(body.cluster);
        const task = this.findTask(clusterArn, body.task);
        check('ecs:StopTask', [
          {
            action: 'ecs:StopTask',
            resource: task?.taskArn ?? taskArnFor(clusterArn, body.task),
            context: { 'ecs:cluster': clusterArn, ...resourceTags(task) },
          },
        ]);
        if (!task) throw new AwsError('InvalidParameterException', 'The referenced task was not found.');
        this.stopTask(task, body.reason ?? '');
        return { task };
      }
      case 'DescribeTasks': {
        const clusterArn = this.clusterArn(body.cluster);
        const refs: string[] = body.tasks ?? [];
        check(
          'ecs:DescribeTasks',
          refs.map((t) => ({
            action: 'ecs:DescribeTasks',
            resource: taskArnFor(clusterArn, t),
            context: { 'ecs:cluster': clusterArn, ...resourceTags(this.findTask(clusterArn, t)) },
          })),
        );
        const found = refs.map((t) => this.findTask(clusterArn, t));
        return {
          tasks: found.filter(Boolean),
          failures: refs
            .filter((_, i) => !found[i])
            .map((t) => ({ arn: taskArnFor(clusterArn, t), reason: 'MISSING' })),
        };
      }
      case 'ListTasks': {
        const clusterArn = this.clusterArn(body.cluster);
        check('ecs:ListTasks', [{ action: 'ecs:ListTasks', resource: '*', context: { 'ecs:cluster': clusterArn } }]);
        const desired = body.desiredStatus ?? 'RUNNING';
        return {
          taskArns: [...this.tasks.values()]
            .filter(
              (t) =>
                t.clusterArn === clusterArn &&
                t.desiredStatus === desired &&
                (!body.startedBy || t.startedBy === body.startedBy) &&
                (!body.family || t.taskDefinitionArn.includes(`/${body.family}:`)),
            )
            .map((t) => t.taskArn),
        };
      }
      case 'TagResource': {
        const task = this.tasks.get(body.resourceArn);
        check('ecs:TagResource', [
          {
            action: 'ecs:TagResource',
            resource: body.resourceArn,
            context: { ...tagContext(body.tags ?? []), ...resourceTags(task) },
          },
        ]);
        if (task) task.tags = [...(task.tags ?? []), ...body.tags];
        return {};
      }
      default:
        throw new AwsError('UnknownOperationException', `The tier's ECS fakes no ${op}`);
    }
  }

  private findTask(clusterArn: string, ref: string): EcsTask | undefined {
    return this.tasks.get(ref) ?? this.tasks.get(taskArnFor(clusterArn, ref));
  }

  private runTask(
    body: any,
    check: (op: string, r: AuthzRequest[]) => void,
    passRoles: (r: (string | undefined)[]) => AuthzRequest[],
  ): unknown {
    const clusterArn = this.clusterArn(body.cluster);
    const td = this.taskDefinition(body.taskDefinition);
    const taskArn = taskArnFor(clusterArn, randomBytes(16).toString('hex'));
    const tags: { key: string; value: string }[] = body.tags ?? [];
    check('ecs:RunTask', [
      {
        action: 'ecs:RunTask',
        resource: td.taskDefinitionArn,
        context: { 'ecs:cluster': clusterArn, ...tagContext(tags) },
      },
      ...(tags.length
        ? [
            {
              action: 'ecs:TagResource',
              resource: taskArn,
              // No `ecs:cluster`: TagResource has no such key (the Service Authorization Reference; the cross-check found it here).
              context: { 'ecs:CreateAction': 'RunTask', ...tagContext(tags) },
            },
          ]
        : []),
      ...passRoles([
        body.overrides?.taskRoleArn ?? td.taskRoleArn,
        body.overrides?.executionRoleArn ?? td.executionRoleArn,
      ]),
    ]);
    const containers = (td.containerDefinitions ?? []) as any[];
    const task: EcsTask = {
      taskArn,
      clusterArn,
      taskDefinitionArn: td.taskDefinitionArn,
      group: body.group ?? `family:${td.family}`,
      startedBy: body.startedBy,
      lastStatus: 'PROVISIONING',
      desiredStatus: 'RUNNING',
      overrides: body.overrides ?? { containerOverrides: [] },
      containers: containers.map((c) => ({ name: c.name, lastStatus: 'PENDING' })),
      tags,
      createdAt: Date.now() / 1000,
      capacityProviderName: body.capacityProviderStrategy?.[0]?.capacityProvider,
      version: 1,
    };
    this.tasks.set(taskArn, task);
    const delays = this.options.startDelays?.();
    if (!delays) this.launch(task, td);
    else {
      // PROVISIONING, then PENDING (with its pull start time, as ECS reports it), then the container.
      const stoppedMeanwhile = () => {
        if (task.desiredStatus !== 'STOPPED') return false;
        this.finish(task, 'UserInitiated', task.stoppedReason ?? '', undefined);
        return true;
      };
      setTimeout(() => {
        if (stoppedMeanwhile()) return;
        task.lastStatus = 'PENDING';
        task.pullStartedAt = Date.now() / 1000;
        task.version++;
        this.options.onTaskChange({ ...task });
        setTimeout(() => {
          if (stoppedMeanwhile()) return;
          task.pullStoppedAt = Date.now() / 1000;
          this.launch(task, td);
        }, delays.pendingMs).unref();
      }, delays.provisioningMs).unref();
    }
    return { tasks: [task], failures: [] };
  }

  /** Runs the task's essential container: the sandbox image's program, in a child process. */
  private launch(task: EcsTask, td: any): void {
    const container =
      (td.containerDefinitions as any[]).find((c) => c.essential !== false) ?? td.containerDefinitions[0];
    const override = (task.overrides?.containerOverrides ?? []).find((o: any) => o.name === container.name) ?? {};
    const dir = join(this.options.workDir, 'tasks', task.taskArn.split('/').pop()!);
    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true });
    // The image's ENV, then the container definition's, then the RunTask overrides.
    const env: Record<string, string> = { NODE_ENV: 'production', WORKSPACE_DIR: '/workspace' };
    for (const e of [...(container.environment ?? []), ...(override.environment ?? [])]) env[e.name] = e.value;
    // Every path is on the task's own disk: nothing is shared with another task.
    env.WORKSPACE_DIR = this.taskPath(task.taskArn, env.WORKSPACE_DIR!);
    mkdirSync(env.WORKSPACE_DIR, { recursive: true });
    // API Gateway is HTTPS; the emulated API listens on plain HTTP on loopback.
    if (env.BRIDGE_URL)
      env.BRIDGE_URL = this.options.publicUrl?.(env.BRIDGE_URL) ?? env.BRIDGE_URL.replace(/^https:\/\//, 'http://');
    // The bridge socket is served where the tier emulates it; elsewhere the program long-polls (its fallback), never reaching out.
    const socket = env.BRIDGE_SOCKET_URL && this.options.bridgeSocketUrl?.(env.BRIDGE_SOCKET_URL);
    if (socket) env.BRIDGE_SOCKET_URL = socket;
    else delete env.BRIDGE_SOCKET_URL;
    const command = override.command ?? container.command;
    if (command) {
      this.finish(
        task,
        'TaskFailedToStart',
        `The tier runs only the sandbox image's CMD, not ${JSON.stringify(command)}`,
        undefined,
      );
      return;
    }
    const child = spawn(process.execPath, [this.options.sandboxProgram], {
      cwd: env.WORKSPACE_DIR,
      // SANDBOX_PARENT_PID is the tier's only addition: the program exits if the test process dies.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env, SANDBOX_PARENT_PID: String(process.pid) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let tail = '';
    child.stderr!.on('data', (c: Buffer) => (tail = (tail + c.toString('utf8')).slice(-4000)));
    const entry = {
      child,
      stopRequested: false,
      interrupted: false,
      exited: new Promise<void>((r) => child.once('exit', () => r())),
    };
    this.processes.set(task.taskArn, entry);
    child.once('spawn', () => {
      task.lastStatus = 'RUNNING';
      task.startedAt = Date.now() / 1000;
      task.containers = task.containers.map((c) => ({ ...c, lastStatus: 'RUNNING' }));
      task.version++;
      this.options.onTaskChange({ ...task });
    });
    child.once('exit', (code, signal) => {
      this.processes.delete(task.taskArn);
      if (entry.interrupted)
        this.finish(task, 'SpotInterruption', task.stoppedReason ?? '', code ?? 137, container.name);
      else if (entry.stopRequested)
        this.finish(task, 'UserInitiated', task.stoppedReason ?? '', code ?? 137, container.name);
      else
        this.finish(
          task,
          'EssentialContainerExited',
          'Essential container in task exited',
          code ?? (signal ? 137 : 1),
          container.name,
          tail,
        );
    });
  }

  private finish(
    task: EcsTask,
    stopCode: string,
    reason: string,
    exitCode: number | undefined,
    name?: string,
    tail = '',
  ): void {
    task.lastStatus = 'STOPPED';
    task.desiredStatus = 'STOPPED';
    task.stopCode = stopCode;
    task.stoppedReason = reason;
    task.stoppedAt = Date.now() / 1000;
    task.containers = task.containers.map((c) => ({
      ...c,
      lastStatus: 'STOPPED',
      ...(c.name === name && exitCode !== undefined ? { exitCode } : {}),
    }));
    task.version++;
    if (tail && exitCode) (task as any).tierLogTail = tail;
    this.options.onTaskChange({ ...task });
  }

  private stopTask(task: EcsTask, reason: string): void {
    if (task.desiredStatus === 'STOPPED') return;
    task.desiredStatus = 'STOPPED';
    task.stoppedReason = reason;
    const p = this.processes.get(task.taskArn);
    if (!p) return;
    p.stopRequested = true;
    p.child.kill('SIGTERM');
    // The container's stop timeout (ECS's default 30 s; ours asks 120 s for the last snapshot): SIGKILL if the program does not exit.
    const containers = (this.taskDefinitions.get(task.taskDefinitionArn)?.containerDefinitions ?? []) as any[];
    const essential = containers.find((c) => c.essential !== false) ?? containers[0];
    setTimeout(() => p.child.kill('SIGKILL'), Number(essential?.stopTimeout ?? 30) * 1000).unref();
  }

  // ---- S3 (REST, path style): the workspace bucket, in memory. Every request is authorized as S3
  // does: a header-signed call as its signer, a presigned GET or POST as the role that signed it
  // (so the presigning function's policy is evaluated for each object it signed for).
  private s3Bucket(path: string): { bucket: string; key: string } | undefined {
    const [, bucket = '', ...rest] = path.split('/');
    if (!this.buckets.has(bucket)) return undefined;
    return { bucket, key: rest.map(decodeURIComponent).join('/') };
  }

  private async s3(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://s3');
    const { bucket, key } = this.s3Bucket(url.pathname)!;
    const objects = this.buckets.get(bucket)!;
    const bucketArn = `arn:aws:s3:::${bucket}`;
    const reply = (status: number, body = '', headers: Record<string, string> = {}): void => {
      res
        .writeHead(status, { 'content-type': 'application/xml', ...headers })
        .end(req.method === 'HEAD' ? undefined : body);
    };
    const error = (status: number, code: string, message: string): void =>
      reply(
        status,
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${xml(message)}</Message></Error>`,
        { 'x-amz-error-code': code },
      );
    try {
      const form =
        req.method === 'POST' && !key && !url.searchParams.has('delete') ? await formOf(req, raw) : undefined;
      const credential =
        /Credential=([^/,\s]+)\//.exec(String(req.headers.authorization ?? ''))?.[1] ??
        url.searchParams.get('X-Amz-Credential')?.split('/')[0] ??
        (typeof form?.get('X-Amz-Credential') === 'string'
          ? String(form.get('X-Amz-Credential')).split('/')[0]
          : undefined) ??
        '';
      const principal = credential === OPERATOR_KEY ? 'operator' : this.keyRoles.get(credential);
      if (!principal)
        return error(403, 'InvalidAccessKeyId', 'The AWS access key Id you provided does not exist in our records.');
      const check = (operation: string, requests: AuthzRequest[]) => this.authorize(principal, operation, requests);
      if (url.searchParams.has('X-Amz-Signature')) {
        const signed = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(url.searchParams.get('X-Amz-Date') ?? '');
        const expires = signed
          ? Date.UTC(+signed[1]!, +signed[2]! - 1, +signed[3]!, +signed[4]!, +signed[5]!, +signed[6]!) +
            Number(url.searchParams.get('X-Amz-Expires')) * 1000
          : 0;
        if (!(expires > Date.now())) return error(403, 'AccessDenied', 'Request has expired');
      }
      if (form) {
        // A browser-form upload: the signed policy must name this key and bound the file's size.
        const field = (name: string) => (typeof form.get(name) === 'string' ? String(form.get(name)) : '');
        const policy = JSON.parse(Buffer.from(field('Policy'), 'base64').toString() || '{}') as {
          expiration?: string;
          conditions?: unknown[];
        };
        const conditions = policy.conditions ?? [];
        const file = form.get('file');
        const range = conditions.find((c) => Array.isArray(c) && c[0] === 'content-length-range') as
          | [string, number, number]
          | undefined;
        const keyCondition = conditions.find((c) => Array.isArray(c) && c[0] === 'eq' && c[1] === '$key') as
          | string[]
          | undefined;
        const objectKey = field('key');
        check('s3:PutObject', [{ action: 's3:PutObject', resource: `${bucketArn}/${objectKey}` }]);
        if (!(Date.parse(policy.expiration ?? '') > Date.now()))
          return error(403, 'AccessDenied', 'Invalid according to Policy: Policy expired.');
        if (!keyCondition || keyCondition[2] !== objectKey)
          return error(403, 'AccessDenied', 'Invalid according to Policy: Policy Condition failed: ["eq", "$key"]');
        if (!(file instanceof Blob))
          return error(400, 'InvalidArgument', 'POST requires exactly one file upload per request.');
        if (range && (file.size < range[1] || file.size > range[2]))
          return error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
        objects.set(objectKey, { body: Buffer.from(await file.arrayBuffer()), modified: new Date() });
        return reply(204);
      }
      if (req.method === 'POST' && url.searchParams.has('delete')) {
        const keys = [...raw.toString('utf8').matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => unxml(m[1]!));
        check(
          's3:DeleteObject',
          keys.map((k) => ({ action: 's3:DeleteObject', resource: `${bucketArn}/${k}` })),
        );
        for (const k of keys) objects.delete(k);
        return reply(
          200,
          `<?xml version="1.0" encoding="UTF-8"?><DeleteResult>${keys.map((k) => `<Deleted><Key>${xml(k)}</Key></Deleted>`).join('')}</DeleteResult>`,
        );
      }
      if (req.method === 'GET' && !key && url.searchParams.get('list-type') === '2') {
        const prefix = url.searchParams.get('prefix') ?? '';
        check('s3:ListBucket', [{ action: 's3:ListBucket', resource: bucketArn, context: { 's3:prefix': prefix } }]);
        const found = [...objects.entries()]
          .filter(([k]) => k.startsWith(prefix))
          .sort(([a], [b]) => a.localeCompare(b));
        const contents = found
          .map(
            ([k, o]) =>
              `<Contents><Key>${xml(k)}</Key><Size>${o.body.length}</Size><LastModified>${o.modified.toISOString()}</LastModified></Contents>`,
          )
          .join('');
        return reply(
          200,
          `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${bucket}</Name><Prefix>${xml(prefix)}</Prefix><KeyCount>${found.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`,
        );
      }
      if (req.method === 'PUT' && key && !url.searchParams.has('uploadId')) {
        // PutObject signed in the Authorization header (the billing export writes its file this way).
        check('s3:PutObject', [{ action: 's3:PutObject', resource: `${bucketArn}/${key}` }]);
        const chunked = String(req.headers['content-encoding'] ?? '').includes('aws-chunked');
        objects.set(key, { body: chunked ? unchunk(raw) : raw, modified: new Date() });
        return reply(200, '', { etag: '"tier"' });
      }
      if ((req.method === 'GET' || req.method === 'HEAD') && key) {
        check('s3:GetObject', [{ action: 's3:GetObject', resource: `${bucketArn}/${key}` }]);
        const o = objects.get(key);
        if (!o) return error(404, 'NoSuchKey', 'The specified key does not exist.');
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': String(o.body.length),
          'last-modified': o.modified.toUTCString(),
          etag: '"tier"',
        });
        res.end(req.method === 'HEAD' ? undefined : o.body);
        return;
      }
      return error(501, 'NotImplemented', `The tier's S3 fakes no ${req.method} ${url.pathname}${url.search}`);
    } catch (err) {
      if (err instanceof AwsError && err.type === 'AccessDeniedException')
        return error(403, 'AccessDenied', err.message);
      return error(500, 'InternalError', (err as Error).message);
    }
  }

  /** An object's bytes, from whichever bucket holds `key` (for assertions). */
  objectBody(key: string): Buffer | undefined {
    for (const objects of this.buckets.values()) if (objects.has(key)) return objects.get(key)!.body;
    return undefined;
  }

  /** The keys stored in a bucket under `prefix` (for assertions). */
  objectKeys(prefix = ''): string[] {
    return [...this.buckets.values()]
      .flatMap((objects) => [...objects.keys()])
      .filter((k) => k.startsWith(prefix))
      .sort();
  }

  /** The local directory a task's container sees at `path` (its own disk: nothing is shared between tasks). */
  taskPath(taskArn: string, path: string): string {
    return join(this.options.workDir, 'tasks', taskArn.split('/').pop()!, 'rootfs', path);
  }
}

/** An `aws-chunked` body (the SDK's streaming upload with a trailing checksum) as its payload: `<hex size>[;...]\r\n<bytes>\r\n`... then 0. */
function unchunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol < 0) throw new Error('aws-chunked: no chunk header');
    const size = Number.parseInt(raw.subarray(at, eol).toString('latin1').split(';')[0]!, 16);
    if (!Number.isFinite(size)) throw new Error('aws-chunked: bad chunk size');
    if (size === 0) return Buffer.concat(parts);
    parts.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

const xml = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const unxml = (v: string) => v.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
const formOf = (req: IncomingMessage, raw: Buffer) =>
  new Response(raw, { headers: { 'content-type': String(req.headers['content-type']) } }).formData();

/** `aws:ResourceTag/<key>` for each tag the task carries. */
const resourceTags = (task: EcsTask | undefined) =>
  Object.fromEntries((task?.tags ?? []).map((t) => [`aws:ResourceTag/${t.key}`, t.value]));
const taskArnFor = (clusterArn: string, ref: string) =>
  ref.startsWith('arn:') ? ref : `${clusterArn.replace(':cluster/', ':task/')}/${ref}`;
const encryptionContext = (ctx: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(ctx ?? {}).map(([k, v]) => [`kms:EncryptionContext:${k}`, v]));
/** DynamoDB's authorization: the action and the table (or index) ARNs each operation touches. */
export function dynamoAuthz(op: string, body: any): AuthzRequest[] {
  const table = (name: string) => (name.startsWith('arn:') ? name : arn('dynamodb', `table/${name}`));
  const action = `dynamodb:${op}`;
  switch (op) {
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.keys(body.RequestItems ?? {}).map((t) => ({ action, resource: table(t) }));
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (body.TransactItems ?? []).map((item: any) => {
        const [kind, spec] = Object.entries(item)[0] as [string, any];
        const a =
          {
            Put: 'PutItem',
            Update: 'UpdateItem',
            Delete: 'DeleteItem',
            ConditionCheck: 'ConditionCheckItem',
            Get: 'GetItem',
          }[kind] ?? kind;
        return { action: `dynamodb:${a}`, resource: table(spec.TableName) };
      });
    case 'ListTables':
      return [{ action, resource: '*' }];
    default:
      return [
        {
          action,
          resource: body.IndexName ? `${table(body.TableName)}/index/${body.IndexName}` : table(body.TableName),
        },
      ];
  }
}
