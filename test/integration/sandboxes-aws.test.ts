import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RegisterTaskDefinitionCommand, RunTaskCommand, StopTaskCommand } from '@aws-sdk/client-ecs';
import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTables, startDynalite, useLocalTables, type EmbeddedDynamo } from '#infra/local/dynamo.ts';
import type { ApiEvent, ApiResult } from '#shared/http/wrapper.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import type { EcsTaskStateChange } from '#shared/sandboxes/ecs-events.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packWorkspace, restoreWorkspace, uploadSnapshot } from '#sandbox/snapshots.ts';
import { BUCKET, CheckedS3, CREDENTIALS } from '#test/helpers/checked-s3.ts';
import { CLUSTER, fargateConfig, FakeAws, sandboxSpecsEnv } from '#test/helpers/fake-aws.ts';
import { ROOMY_PLANS } from '#test/helpers/stack.ts';

/**
 * The AWS path end to end: the Lambda handlers as API Gateway and EventBridge call them, with
 * awsServices() wiring, DynamoDB on dynalite, ECS and KMS at the SDK boundary, S3 as s3rver behind a signature check.
 */
let dynamo: EmbeddedDynamo;
let aws: FakeAws;
const kms = mockClient(KMSClient);

beforeAll(async () => {
  dynamo = await startDynalite();
  useLocalTables(dynamo.endpoint, 'aws-path');
  await createTables(dynamo.endpoint, 'aws-path');
  Object.assign(process.env, {
    AWS_REGION: 'eu-west-1',
    SECRETS_KEY_ID: 'alias/acs-secrets',
    ECS_CLUSTER_ARN: CLUSTER,
    SANDBOX_SUBNET_IDS: fargateConfig.subnetIds.join(','),
    SANDBOX_SECURITY_GROUP_ID: fargateConfig.securityGroupId,
    SANDBOX_TASK_ROLE_ARN: fargateConfig.taskRoleArn,
    SANDBOX_EXECUTION_ROLE_ARN: fargateConfig.executionRoleArn,
    SANDBOX_SPECS: sandboxSpecsEnv(),
    // The deployer's plans (context key `plans`): roomy, as in every suite not about plans.
    PLANS: readFileSync(ROOMY_PLANS, 'utf8'),
  });
  // KMS stand-in: the "ciphertext" carries its context, so a wrong context fails as KMS would.
  kms.on(EncryptCommand).callsFake(async ({ Plaintext, EncryptionContext }) => ({
    CiphertextBlob: Buffer.from(JSON.stringify({ c: EncryptionContext, p: Buffer.from(Plaintext).toString('base64') })),
  }));
  kms.on(DecryptCommand).callsFake(async ({ CiphertextBlob, EncryptionContext }) => {
    const { c, p } = JSON.parse(Buffer.from(CiphertextBlob).toString('utf8'));
    if (JSON.stringify(c) !== JSON.stringify(EncryptionContext))
      throw Object.assign(new Error('denied'), { name: 'InvalidCiphertextException' });
    return { Plaintext: Buffer.from(p, 'base64') };
  });
});
afterAll(async () => {
  kms.restore();
  await dynamo?.close();
});
beforeEach(() => {
  aws?.restore();
  aws = new FakeAws();
});

const context = {} as Context;
let n = 0;
async function invoke(
  entry: string,
  method: string,
  path: string,
  init: { userId?: string; key?: string; body?: unknown; params?: Record<string, string>; query?: string } = {},
) {
  const { handler } = (await import(`../../functions/${entry}`)) as {
    handler: (e: ApiEvent, c: Context) => Promise<ApiResult>;
  };
  const event = {
    version: '2.0',
    rawPath: path,
    rawQueryString: init.query ?? '',
    headers: {
      host: 'abc123.execute-api.eu-west-1.amazonaws.com',
      ...(init.key ? { 'x-session-api-key': init.key } : {}),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
    pathParameters: init.params,
    body: init.body ? JSON.stringify(init.body) : undefined,
    isBase64Encoded: false,
    requestContext: {
      requestId: `req-${++n}`,
      http: { method, path },
      authorizer: { lambda: { userId: init.userId ?? '' } },
    },
  } as unknown as ApiEvent;
  const result = await handler(event, context);
  return { status: result.statusCode!, body: JSON.parse(result.body as string), headers: result.headers ?? {} };
}

const startAs = (userId: string) => invoke('sandboxes/start.ts', 'POST', '/api/v1/sandboxes', { userId });
const getAs = async (userId: string, id: string) =>
  (await invoke('sandboxes/batch-get.ts', 'GET', '/api/v1/sandboxes', { userId, query: `id=${id}` })).body[0];
const runEnv = () =>
  aws.ecs.commandCalls(RunTaskCommand).at(-1)!.args[0].input.overrides!.containerOverrides![0]!.environment!;
const envValue = (name: string) => runEnv().find((e) => e.name === name)?.value;

async function ecsEvent(fixture: string, sandboxId: string, generation: number) {
  const event = JSON.parse(
    readFileSync(new URL(`../fixtures/ecs-events/${fixture}`, import.meta.url), 'utf8'),
  ) as EcsTaskStateChange;
  event.detail!.startedBy = sandboxId;
  for (const e of event.detail!.overrides!.containerOverrides![0]!.environment!) {
    if (e.name === 'SANDBOX_ID') e.value = sandboxId;
    if (e.name === 'SANDBOX_GENERATION') e.value = String(generation);
  }
  const { handler } = await import('../../functions/sandboxes/ecs-events.ts');
  await handler(event as never);
}

describe('sandboxes on the AWS path', () => {
  it('starts a task with a one-time token; the bridge URL comes from the request host', async () => {
    const res = await startAs('alice');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('STARTING');
    expect(envValue('BRIDGE_URL')).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com');
    expect(envValue('SANDBOX_ID')).toBe(res.body.id);
    const token = envValue('ENROLLMENT_TOKEN')!;

    // The task's program checks in: RUNNING; its session key goes to the program only.
    const checkIn = await invoke('bridge/check-in.ts', 'POST', '/bridge/check-in', {
      key: token,
      body: { version: '1' },
      params: { sandbox_id: res.body.id },
    });
    expect(checkIn.status).toBe(200);
    const running = await getAs('alice', res.body.id);
    expect(running.status).toBe('RUNNING');
    expect(checkIn.body.session_api_key).toMatch(/^sbx_/);
    expect(running.session_api_key).toBeNull();
    expect(await getAs('mallory', res.body.id)).toBeNull();
    const again = await invoke('bridge/check-in.ts', 'POST', '/bridge/check-in', {
      key: token,
      body: {},
      params: { sandbox_id: res.body.id },
    });
    expect(again.status).toBe(401);
  });

  it('throttling leaves the start waiting (never a 500, never a wait in the request); the sweeper retries it with a new token', async () => {
    aws.ecs.on(RunTaskCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    const res = await startAs('bob');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('STARTING');
    expect(res.body.detail).toMatch(
      /^Waiting to start, trying again at \S+: AWS is throttling sandbox starts \(ThrottlingException: Rate exceeded\)$/,
    );
    const { handler: sweep } = await import('../../functions/sandboxes/sweeper.ts');
    // Not due yet: the sweep leaves it.
    expect((await sweep({})).retried).not.toContain(res.body.id);
    const store = new DynamoSandboxStore();
    const rec = (await store.get(res.body.id))!;
    expect(rec.runtimeState).toMatchObject({
      retryAttempt: '1',
      bridgeUrl: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
      launch: '{}',
    });
    await store.update(rec.id, rec.version, {
      runtimeState: { ...rec.runtimeState, retryAt: new Date(Date.now() - 1000).toISOString() },
    });
    aws.restore();
    aws = new FakeAws();
    expect((await sweep({})).retried).toContain(res.body.id);
    const token = envValue('ENROLLMENT_TOKEN')!;
    expect(envValue('SANDBOX_ID')).toBe(res.body.id);
    expect(envValue('BRIDGE_URL')).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com');
    const checkIn = await invoke('bridge/check-in.ts', 'POST', '/bridge/check-in', {
      key: token,
      body: { version: '1' },
      params: { sandbox_id: res.body.id },
    });
    expect(checkIn.status).toBe(200);
    const running = await getAs('bob', res.body.id);
    expect(running).toMatchObject({ status: 'RUNNING', detail: null });
  });

  it('a start that stays without capacity until its time-out is an ERROR naming the missing capacity', async () => {
    const noCapacity = {
      tasks: [],
      failures: [
        { reason: 'Capacity is unavailable at this time. Please try again later or in a different availability zone' },
      ],
    };
    aws.ecs.on(RunTaskCommand).resolves(noCapacity);
    const id = (await startAs('bob')).body.id;
    const store = new DynamoSandboxStore();
    const rec = (await store.get(id))!;
    const old = new Date(Date.now() - 601_000).toISOString();
    await store.update(id, rec.version, { startedAt: old, lastActivityAt: old });
    const { handler: sweep } = await import('../../functions/sandboxes/sweeper.ts');
    expect((await sweep({})).failed).toContain(id);
    const failed = await getAs('bob', id);
    expect(failed.status).toBe('ERROR');
    expect(failed.detail).toBe(
      'The sandbox could not be started within 600 seconds: No Fargate capacity was available (Capacity is unavailable at this time. Please try again later or in a different availability zone)',
    );
  });

  it('images and the resource factor from the settings reach RunTask; settings save refuses other factors', async () => {
    const save = (body: unknown) => invoke('settings/save.ts', 'POST', '/api/settings', { userId: 'ivan', body });
    expect((await save({ remote_runtime_resource_factor: 3 })).status).toBe(422);
    expect(
      (
        await save({
          remote_runtime_resource_factor: 4,
          sandbox_base_container_image: 'ubuntu:24.04',
          sandbox_runtime_container_image: 'ghcr.io/acme/sandbox:1',
        })
      ).status,
    ).toBe(200);
    const res = await startAs('ivan');
    expect(res.body.status).toBe('STARTING');
    const input = aws.ecs.commandCalls(RunTaskCommand).at(-1)!.args[0].input;
    expect(input.overrides).toMatchObject({ cpu: '4096', memory: '8192' });
    // The runtime image wins over the base image.
    expect(input.taskDefinition).toMatch(/task-definition\/acs-sandbox-default-runtime-[0-9a-f]{16}:\d+$/);
    expect(aws.ecs.commandCalls(RegisterTaskDefinitionCommand)[0]!.args[0].input.containerDefinitions![0]!.image).toBe(
      'ghcr.io/acme/sandbox:1',
    );
    // 8 x (1 vCPU, 2 GiB) is still a Fargate size (products beyond it: test/unit/fargate-runtime.test.ts).
    expect((await save({ remote_runtime_resource_factor: 8 })).status).toBe(200);
    expect((await startAs('ivan')).body.status).toBe('STARTING');
    expect(aws.ecs.commandCalls(RunTaskCommand).at(-1)!.args[0].input.overrides).toMatchObject({
      cpu: '8192',
      memory: '16384',
    });
  });

  it('turns an unrequested STOPPED event into ERROR, a stop that was asked for into PAUSED, and ignores stale generations', async () => {
    const crashed = (await startAs('carol')).body.id;
    await ecsEvent('stopped-crash.json', crashed, 2); // a generation that is not current: ignored
    expect((await getAs('carol', crashed)).status).toBe('STARTING');
    await ecsEvent('stopped-image-pull.json', crashed, 1);
    const failed = await getAs('carol', crashed);
    expect(failed.status).toBe('ERROR');
    expect(failed.detail).toMatch(/^The sandbox image could not be pulled: CannotPullContainerError/);
    // Redelivered: no harm.
    await ecsEvent('stopped-image-pull.json', crashed, 1);
    expect((await getAs('carol', crashed)).updated_at).toBe(failed.updated_at);

    const stopped = (await startAs('carol')).body.id;
    await ecsEvent('stopped-user-initiated.json', stopped, 1);
    const paused = await getAs('carol', stopped);
    expect(paused.status).toBe('PAUSED');
    expect(paused.detail).toBe('The sandbox task was stopped: Task stopped by user');

    // A Spot interruption is no fault of the sandbox's: PAUSED, saying why, and it resumes.
    const spot = (await startAs('carol')).body.id;
    await ecsEvent('stopped-spot.json', spot, 1);
    const interrupted = await getAs('carol', spot);
    expect(interrupted.status).toBe('PAUSED');
    expect(interrupted.detail).toMatch(/^Paused: Fargate Spot reclaimed the capacity/);
    const resume = await invoke('sandboxes/resume.ts', 'POST', `/api/v1/sandboxes/${spot}/resume`, {
      userId: 'carol',
      params: { sandbox_id: spot },
    });
    expect(resume.status).toBe(200);
    expect((await getAs('carol', spot)).status).toBe('STARTING');

    // The interrupted task left ListTasks before its STOPPED event, and a sweep called it MISSING: still PAUSED.
    const store = new DynamoSandboxStore();
    const missing = async () => {
      const id = (await startAs('carol')).body.id as string;
      const rec = (await store.get(id))!;
      await store.update(id, rec.version, {
        status: 'MISSING',
        detail: 'The sandbox process or task no longer exists',
        liveShard: null,
        liveUserId: null,
        enrollmentHash: null,
      });
      return id;
    };
    const swept = await missing();
    await ecsEvent('stopped-spot.json', swept, 1);
    expect(await getAs('carol', swept)).toMatchObject({
      status: 'PAUSED',
      detail: expect.stringMatching(/^Paused: Fargate Spot reclaimed/),
    });
    // A crash reported after MISSING changes nothing: only an interruption is known to be resumable.
    const crashed2 = await missing();
    await ecsEvent('stopped-crash.json', crashed2, 1);
    expect((await getAs('carol', crashed2)).status).toBe('MISSING');
  });

  it('pauses with StopTask and resumes with a new generation and a new token', async () => {
    const id = (await startAs('dave')).body.id;
    const firstToken = envValue('ENROLLMENT_TOKEN');
    const pause = await invoke('sandboxes/pause.ts', 'POST', `/api/v1/sandboxes/${id}/pause`, {
      userId: 'dave',
      params: { sandbox_id: id },
    });
    expect(pause.body).toEqual({ success: true });
    expect(aws.ecs.commandCalls(StopTaskCommand)).toHaveLength(1);
    // ECS then reports the stop it was asked for: the sandbox stays PAUSED.
    await ecsEvent('stopped-user-initiated.json', id, 1);
    expect((await getAs('dave', id)).detail).toBeNull();
    const resume = await invoke('sandboxes/resume.ts', 'POST', `/api/v1/sandboxes/${id}/resume`, {
      userId: 'dave',
      params: { sandbox_id: id },
    });
    expect(resume.body).toEqual({ success: true });
    expect(envValue('SANDBOX_GENERATION')).toBe('2');
    expect(envValue('ENROLLMENT_TOKEN')).not.toBe(firstToken);
    expect(aws.ecs.commandCalls(RunTaskCommand)).toHaveLength(2);
  });

  it('runs the scheduled sweeper: a start stuck past 600 s becomes ERROR and its task is stopped', async () => {
    const id = (await startAs('frank')).body.id;
    const store = new DynamoSandboxStore();
    const rec = (await store.get(id))!;
    const old = new Date(Date.now() - 601_000).toISOString();
    await store.update(id, rec.version, { startedAt: old, lastActivityAt: old });
    const { handler } = await import('../../functions/sandboxes/sweeper.ts');
    const summary = await handler({});
    expect(summary.failed).toContain(id);
    const failed = await getAs('frank', id);
    expect(failed.detail).toBe('The sandbox did not check in within 600 seconds of starting');
    expect(aws.ecs.commandCalls(StopTaskCommand).map((c) => c.args[0].input.task)).toContain(rec.runtimeRef);
  });
});

describe('workspace snapshots through the bridge on the AWS path', () => {
  const s3 = new CheckedS3();
  const SNAPSHOTS_DELETE_FUNCTION = 'arn:aws:lambda:eu-west-1:123456789012:function:snapshots-delete';
  // Lambda's Invoke API at its HTTP boundary (the functions sign one POST: shared/lambda-event.ts): an
  // `Event` invocation of the snapshot-removal function, signed, runs its handler; a throttled one is 429.
  const removals: unknown[] = [];
  let failInvokes = 0;
  const lambda = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (failInvokes > 0 && failInvokes--) {
        res.writeHead(429, { 'x-amzn-errortype': 'TooManyRequestsException' }).end('{"message":"Rate exceeded"}');
        return;
      }
      expect(req.method).toBe('POST');
      expect(req.url).toBe(`/2015-03-31/functions/${encodeURIComponent(SNAPSHOTS_DELETE_FUNCTION)}/invocations`);
      expect(req.headers['x-amz-invocation-type']).toBe('Event');
      expect(req.headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/eu-west-1\/lambda\/aws4_request/,
      );
      const payload = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      removals.push(payload);
      const { handler } = await import('../../functions/sandboxes/snapshots-delete.ts');
      await handler(payload);
      res.writeHead(202).end();
    });
  });
  beforeAll(async () => {
    await s3.start();
    await new Promise<void>((resolve) => lambda.listen(0, '127.0.0.1', resolve));
    process.env.AWS_ENDPOINT_URL_LAMBDA = `http://127.0.0.1:${(lambda.address() as AddressInfo).port}`;
    // The snapshot functions' S3 client, as on Lambda: bucket and credentials from the environment.
    Object.assign(process.env, {
      WORKSPACE_BUCKET: BUCKET,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      SNAPSHOTS_DELETE_FUNCTION,
    });
  }, 30_000);
  afterAll(async () => {
    lambda.close();
    delete process.env.AWS_ENDPOINT_URL_LAMBDA;
    await s3.stop();
    for (const name of [
      'WORKSPACE_BUCKET',
      'AWS_ENDPOINT_URL_S3',
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
      'SNAPSHOTS_DELETE_FUNCTION',
    ])
      delete process.env[name];
  });

  async function running(userId: string) {
    const id = (await startAs(userId)).body.id as string;
    const checkIn = await invoke('bridge/check-in.ts', 'POST', '/bridge/check-in', {
      key: envValue('ENROLLMENT_TOKEN'),
      body: { version: '1' },
      params: { sandbox_id: id },
    });
    return { id, key: checkIn.body.session_api_key as string };
  }
  const bridge = (entry: string, method: string, sb: { id: string; key: string }, body?: unknown) =>
    invoke(`bridge/${entry}`, method, `/bridge/${entry}`, { key: sb.key, body, params: { sandbox_id: sb.id } });

  it('issues its own presigned requests, moves the pointer only to an upload S3 has, and restores it', async () => {
    const sb = await running('erin');
    expect(envValue('SANDBOX_SNAPSHOTS')).toBe('1');
    s3.intent = { sandboxId: sb.id, maxBytes: 2 * 1024 ** 3, expiresSeconds: 300 };
    expect((await bridge('snapshot-download.ts', 'GET', sb)).body).toEqual({ url: null, expires_at: null });

    const workspace = mkdtempSync(join(tmpdir(), 'ws-'));
    writeFileSync(join(workspace, 'notes.md'), 'kept across a pause');
    const grant = (await bridge('snapshot-upload.ts', 'POST', sb)).body;
    expect(grant.key.startsWith(`sandboxes/${sb.id}/`)).toBe(true);
    // Reported before it was uploaded (a kill mid-upload): refused, nothing becomes current.
    expect((await bridge('snapshot-complete.ts', 'POST', sb, { key: grant.key })).status).toBe(409);
    expect((await bridge('snapshot-download.ts', 'GET', sb)).body.url).toBeNull();

    const packed = await packWorkspace(workspace);
    await uploadSnapshot(grant, packed.file, packed.bytes);
    packed.cleanup();
    const done = await bridge('snapshot-complete.ts', 'POST', sb, { key: grant.key });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ key: grant.key, bytes: expect.any(Number) });
    const { url } = (await bridge('snapshot-download.ts', 'GET', sb)).body;
    const fresh = mkdtempSync(join(tmpdir(), 'ws-'));
    await restoreWorkspace(url, fresh);
    expect(readFileSync(join(fresh, 'notes.md'), 'utf8')).toBe('kept across a pause');
    expect(s3.refusals).toEqual([]);
  });

  it("a delete removes the sandbox's snapshots once its last task has stopped (it saves after SIGTERM), then the record", async () => {
    const sb = await running('judy');
    s3.intent = { sandboxId: sb.id, maxBytes: 2 * 1024 ** 3, expiresSeconds: 300 };
    const workspace = mkdtempSync(join(tmpdir(), 'ws-'));
    writeFileSync(join(workspace, 'a.txt'), 'x');
    const grant = (await bridge('snapshot-upload.ts', 'POST', sb)).body;
    const packed = await packWorkspace(workspace);
    await uploadSnapshot(grant, packed.file, packed.bytes);
    packed.cleanup();
    expect((await bridge('snapshot-complete.ts', 'POST', sb, { key: grant.key })).status).toBe(200);
    const other = await running('judy');
    s3.intent = { sandboxId: other.id, maxBytes: 2 * 1024 ** 3, expiresSeconds: 300 };
    const otherGrant = (await bridge('snapshot-upload.ts', 'POST', other)).body;
    const otherPacked = await packWorkspace(workspace);
    await uploadSnapshot(otherGrant, otherPacked.file, otherPacked.bytes);
    otherPacked.cleanup();
    expect(await s3.keys(`sandboxes/${sb.id}/`)).toEqual([grant.key]);

    aws.stopsLinger = true;
    const del = await invoke('sandboxes/delete.ts', 'DELETE', `/api/v1/sandboxes/${sb.id}`, {
      userId: 'judy',
      params: { sandbox_id: sb.id },
    });
    expect(del.body).toEqual({ success: true });
    expect(await getAs('judy', sb.id)).toBeNull();
    const store = new DynamoSandboxStore();
    // Still stopping: the snapshot and the record (marked deleted) stay.
    expect((await store.get(sb.id))?.deletedAt).toEqual(expect.any(String));
    expect(await s3.keys(`sandboxes/${sb.id}/`)).toEqual([grant.key]);
    expect(removals).toEqual([]);
    aws.finishStops();
    // The removal cannot be asked for (Lambda throttles): the record stays for the next attempt.
    failInvokes = 1;
    await ecsEvent('stopped-user-initiated.json', sb.id, 1);
    expect((await store.get(sb.id))?.deletedAt).toEqual(expect.any(String));
    expect(await s3.keys(`sandboxes/${sb.id}/`)).toEqual([grant.key]);
    // The event again (EventBridge's retry, or the sweeper's): the removal function is invoked, then the record goes.
    await ecsEvent('stopped-user-initiated.json', sb.id, 1);
    expect(removals).toEqual([{ sandboxId: sb.id }]);
    expect(await store.get(sb.id)).toBeUndefined();
    expect(await s3.keys(`sandboxes/${sb.id}/`)).toEqual([]);
    // Another sandbox's objects are untouched.
    expect(await s3.keys(`sandboxes/${other.id}/`)).toEqual([otherGrant.key]);
  });

  it('the snapshot-removal function removes nothing for a payload that is not one sandbox id', async () => {
    const key = 'sandboxes/sbxkept/0000000000001-0123456789abcdef.tar.gz';
    await s3.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'x' }));
    const { handler } = await import('../../functions/sandboxes/snapshots-delete.ts');
    for (const payload of [
      { sandboxId: '' },
      { sandboxId: '../' },
      { sandboxId: 'sbxkept/..' },
      { sandboxId: '*' },
      {},
      { sandboxId: ['x'] },
    ]) {
      await expect(handler(payload as never), JSON.stringify(payload)).rejects.toThrow(/Not a sandbox id/);
    }
    expect(await s3.keys('sandboxes/')).toContain(key);
  });

  it('a program that asks for uploads and never completes them gets a 429 once its prefix is full; a completed snapshot makes room', async () => {
    const sb = await running('mallory');
    s3.intent = { sandboxId: sb.id, maxBytes: 2 * 1024 ** 3, expiresSeconds: 300 };
    const workspace = mkdtempSync(join(tmpdir(), 'ws-'));
    writeFileSync(join(workspace, 'junk.bin'), 'x'.repeat(1000));
    const packed = await packWorkspace(workspace);
    const grants = [];
    for (let i = 0; i < 4; i++) {
      const grant = (await bridge('snapshot-upload.ts', 'POST', sb)).body;
      await uploadSnapshot(grant, packed.file, packed.bytes);
      grants.push(grant);
    }
    const refused = await bridge('snapshot-upload.ts', 'POST', sb);
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toBe('Too many snapshots of this sandbox are pending: complete one first');
    expect((await bridge('snapshot-complete.ts', 'POST', sb, { key: grants[3].key })).status).toBe(200);
    expect(await s3.keys(`sandboxes/${sb.id}/`)).toEqual([grants[3].key]);
    expect((await bridge('snapshot-upload.ts', 'POST', sb)).status).toBe(200);
    packed.cleanup();
  });

  it("refuses another sandbox's keys, path tricks, and a foreign or missing session key", async () => {
    const mine = await running('frank');
    const theirs = await running('grace');
    const theirGrant = (await bridge('snapshot-upload.ts', 'POST', theirs)).body;
    expect((await bridge('snapshot-complete.ts', 'POST', mine, { key: theirGrant.key })).status).toBe(409);
    expect(
      (await bridge('snapshot-complete.ts', 'POST', mine, { key: `sandboxes/${mine.id}/../${theirs.id}/x.tar.gz` }))
        .status,
    ).toBe(409);
    expect((await bridge('snapshot-upload.ts', 'POST', { id: mine.id, key: theirs.key })).status).toBe(401);
    expect((await bridge('snapshot-download.ts', 'GET', { id: theirs.id, key: 'sbx_wrong' })).status).toBe(401);
    expect((await bridge('snapshot-complete.ts', 'POST', mine, {})).status).toBe(422);
  });
});
