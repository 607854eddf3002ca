import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { DynamoPoolStore } from '#shared/sandboxes/dynamo-pool-store.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import { documentClient } from '#shared/store/dynamo.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';
import { waitFor } from '#test/helpers/wait.ts';

// What one conversation start (POST /api/v1/app-conversations, which starts a new sandbox and queues its
// start_conversation command) costs in DynamoDB and KMS requests, counted against dynalite over HTTP through
// the local gateway. KMS: each seal or open of the sealer is one Encrypt or Decrypt on AWS (kms-sealer.ts).
// The sandbox spec runs `sleep`: no program checks in, heartbeats or polls while a start is counted.
//
// Every issue that adds a request to a start names it and changes the expectation here with a comment.
//
// Before issue 27 (main at 92da3ca) a start was 20 DynamoDB requests and one Decrypt per stored secret: settings
// read twice (the start's check, then the sandbox start's launch options) with every secret opened to check that an
// LLM key is set; the conversation written three times (create, start_task_id, sandbox_id: 1 Put, 3 UpdateItem, a
// Get); the task three times (create, WAITING_FOR_SANDBOX, read back); the sandbox's record read again by the launch
// and by the command's enqueue (2 Get, and an UpdateItem for the command's seq). Of the 20, the SaaS work added 3
// (pay per use #22: the organization's month and its running slot; neighbours #23: the paused count), so 17 before
// it; issue 27 asked for half of those.
/**
 * A start now: 11 DynamoDB requests, no KMS request. The 8 of the start itself (17 before):
 * - GetItem settings: once, masked (that a key is set is `llm_api_key_set`; the sandbox opens the secrets later);
 * - UpdateItem conversations: the user's conversation count (a conditional ADD, which holds `max_conversations`);
 * - PutItem conversations: the record, once, naming its task and sandbox by ids chosen first;
 * - PutItem startTasks: the task, once, WAITING_FOR_SANDBOX;
 * - PutItem sandboxes: the sandbox's record, its first command's seq on it;
 * - PutItem commands: `start_conversation`, queued before anything runs (no record read, nothing to push);
 * - Query sandboxes: the user's live sandboxes (the per-user running limit pauses the oldest);
 * - UpdateItem sandboxes: the launch's outcome on the record, decided on the record the start wrote (no read).
 * And the 3 of the plans (#22, #23): Query usage (the organization's month), Query sandboxes (the user's paused
 * ones, a COUNT), UpdateItem sandboxes (the organization's running slot).
 * With a warm pool the claim adds 3 or 4 (the last describe). An MCP secret in the request adds one Encrypt.
 */
const NOW = {
  dynamo: 11,
  kms: 0,
  byRequest: {
    'GetItemCommand@settings': 1,
    'PutItemCommand@commands': 1,
    'PutItemCommand@conversations': 1,
    'PutItemCommand@sandboxes': 1,
    'PutItemCommand@startTasks': 1,
    'QueryCommand@sandboxes': 2,
    'QueryCommand@usage': 1,
    'UpdateItemCommand@conversations': 1,
    'UpdateItemCommand@sandboxes': 2,
  },
};

/**
 * A sandbox start of a spec without a pool (POST /api/v1/sandboxes), the authorizer's cached key read left out: 7
 * (8 before issue 27, when the launch read again the record the start had just written).
 */
const COLD_SANDBOX_START: string[] = [
  'GetItemCommand@settings',
  'PutItemCommand@sandboxes',
  'QueryCommand@sandboxes',
  'QueryCommand@sandboxes',
  'QueryCommand@usage',
  'UpdateItemCommand@sandboxes',
  'UpdateItemCommand@sandboxes',
];
/** What the claim adds to it when the spec keeps a pool and no standby is ready (the start is cold). */
const POOL_CLAIM = ['BatchGetItemCommand@users+orgs', 'QueryCommand@pool', 'UpdateItemCommand@pool'];

let stack: TestStack;
let specsDir: string;
/** `Command@table` of every DynamoDB request, `Encrypt@kms`/`Decrypt@kms` of every seal and open, while set. */
let sent: string[] | undefined;
const sealerSeal = LocalSealer.prototype.seal;
const sealerOpen = LocalSealer.prototype.open;

beforeAll(async () => {
  specsDir = mkdtempSync(join(tmpdir(), 'acs-start-requests-'));
  const specsFile = join(specsDir, 'specs.json');
  const spec = {
    command: ['sleep', '600'],
    created_at: '2025-11-01T00:00:00Z',
    initial_env: {},
    working_dir: '{data_dir}/sandboxes/{sandbox_id}/workspace',
  };
  // The default spec (a conversation's) keeps no pool: a start is cold and asks no pool. `pooled` keeps
  // one standby, which only sleeps: it never checks in, so the test says when it is ready.
  writeFileSync(
    specsFile,
    JSON.stringify([
      { ...spec, id: 'idle' },
      { ...spec, id: 'pooled', warmPool: { size: 1, idleMinutes: 30 } },
    ]),
  );
  stack = await startTestStack({
    specsFile,
    sweepIntervalMs: 3_600_000,
    sandboxes: { maxRunning: 50 },
    warmPoolSize: undefined,
  });
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; RequestItems?: Record<string, unknown> };
      const table = input.TableName ?? Object.keys(input.RequestItems ?? {}).join('+');
      sent?.push(`${context.commandName}@${table.replace(/(^|\+)acs-/g, '$1')}`);
      return next(args);
    },
    { step: 'initialize', name: 'countStartRequests' },
  );
  LocalSealer.prototype.seal = function (...args) {
    sent?.push('Encrypt@kms');
    return sealerSeal.apply(this, args);
  };
  LocalSealer.prototype.open = function (...args) {
    sent?.push('Decrypt@kms');
    return sealerOpen.apply(this, args);
  };
  const saved = await stack.call('POST', '/api/settings', {
    body: {
      llm_model: 'openai/gpt-4o',
      llm_api_key: 'sk-count',
      search_api_key: 'tvly-count',
      secrets_store: { custom_secrets: { ONE: { secret: 'one' } } },
    },
  });
  expect(saved.status).toBe(200);
}, 60_000);

afterAll(async () => {
  LocalSealer.prototype.seal = sealerSeal;
  LocalSealer.prototype.open = sealerOpen;
  documentClient().middlewareStack.remove('countStartRequests');
  await stack?.stop();
  rmSync(specsDir, { recursive: true, force: true });
});

/** A call's answer and the requests it made, sorted. */
async function counted(path: string, body?: unknown): Promise<{ status: number; body: any; requests: string[] }> {
  sent = [];
  try {
    const res = await stack.call('POST', path, { body });
    return { status: res.status, body: res.body, requests: sent.sort() };
  } finally {
    sent = undefined;
  }
}

/** Starts a conversation; its answer and the requests it made, sorted. */
const countedStart = () =>
  counted('/api/v1/app-conversations', { initial_message: { content: [{ type: 'text', text: 'count me' }] } });

const count = (requests: string[]) =>
  Object.fromEntries(
    [...new Set(requests)]
      .map((r) => [r, requests.filter((x) => x === r).length] as const)
      .sort(([a], [b]) => a.localeCompare(b)),
  );

describe('one conversation start in DynamoDB and KMS requests', () => {
  it('11 DynamoDB requests and none to KMS, counted on a warm process: the V1 start and the legacy create alike', async () => {
    await countedStart(); // the first start of a process also opens the cursor and conversation-key secrets
    const start = await countedStart();
    expect(start.status).toBe(200);
    expect(start.body.status).toBe('WAITING_FOR_SANDBOX');
    const legacy = await counted('/api/conversations', { initial_user_msg: 'count me too' });
    expect(legacy.status).toBe(200);
    expect(legacy.body.status).toBe('ok');
    for (const { requests } of [start, legacy]) {
      const dynamo = requests.filter((r) => !r.endsWith('@kms'));
      const kms = requests.filter((r) => r.endsWith('@kms'));
      expect({ dynamo: dynamo.length, kms: kms.length }).toEqual({ dynamo: NOW.dynamo, kms: NOW.kms });
      expect(count(requests)).toEqual(NOW.byRequest);
    }
  });

  it('a request with an MCP secret seals it (one Encrypt) and still opens nothing', async () => {
    const start = await counted('/api/v1/app-conversations', {
      mcp_config: { shttp_servers: [{ url: 'https://mcp.example.test/mcp', api_key: 'mcp-secret' }] },
    });
    expect(start.status).toBe(200);
    expect(count(start.requests)).toEqual({ ...NOW.byRequest, 'Encrypt@kms': 1 });
  });

  it("a start naming another user's sandbox is a 404 after two reads, and writes nothing", async () => {
    const key = await stack.newUser('start-requests-other');
    const theirs = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=idle', { key });
    expect(theirs.status).toBe(200);
    const start = await counted('/api/v1/app-conversations', { sandbox_id: theirs.body.id });
    expect(start.status).toBe(404);
    expect(start.requests).toEqual(['BatchGetItemCommand@sandboxes', 'GetItemCommand@settings']);
    expect(await new DynamoSandboxStore().listCommands(theirs.body.id, 10)).toEqual([]);
    await stack.call('POST', `/api/v1/sandboxes/${theirs.body.id}/pause`, { key });
  });

  it('the records name each other: the conversation its task and sandbox, the task its sandbox, whose queue holds the start command', async () => {
    const start = await countedStart();
    const task = start.body;
    const [conversation] = (await stack.call('GET', `/api/v1/app-conversations?ids=${task.app_conversation_id}`)).body;
    expect(conversation).toMatchObject({ id: task.app_conversation_id, sandbox_id: task.sandbox_id });
    const sandbox = await new DynamoSandboxStore().get(task.sandbox_id);
    expect(sandbox).toMatchObject({ status: 'STARTING', commandSeq: 1 });
    expect(await new DynamoSandboxStore().listCommands(task.sandbox_id, 10)).toEqual([
      expect.objectContaining({
        seq: 1,
        type: 'start_conversation',
        payload: JSON.stringify({ conversation_id: task.app_conversation_id, start_task_id: task.id }),
      }),
    ]);
    expect((await new DynamoConversationStore().get('dev', task.app_conversation_id))?.start_task_id).toBe(task.id);
  });
});

/*
 * What the warm pool's claim adds to a start that starts a sandbox (the same code for a conversation's
 * sandbox and POST /api/v1/sandboxes, counted here on the latter, the spec named): a spec without a pool
 * asks nothing of the pool; with one, the claim reads the account's status (one BatchGetItem of the user
 * and the organization), marks the pool's last start (one UpdateItem) and lists its standbys (one Query);
 * taking a ready standby is one more conditional UpdateItem. The refill after a claim is asynchronous (on
 * AWS an asynchronous Lambda invoke, locally work after the answer): its requests are not the start's, so
 * it is held off while counting.
 */
describe('what the warm pool claim adds to a sandbox start', () => {
  const pools = () => new DynamoPoolStore();
  const started: string[] = [];
  const start = async (specId: string) => {
    const res = await counted(`/api/v1/sandboxes?sandbox_spec_id=${specId}`);
    expect(res.status).toBe(200);
    started.push(res.body.id);
    return res;
  };
  /** Runs `fn` with the pool's refill held off (it runs after the answer, not as part of the start). */
  const withoutRefill = async <T>(fn: () => Promise<T>): Promise<T> => {
    const pool = stack.services.warmPool;
    const refill = pool.refill;
    pool.refill = async () => [];
    try {
      return await fn();
    } finally {
      pool.refill = refill;
    }
  };

  afterAll(async () => {
    // Paused, so the pooled start's claimed standby leaves no binding deadline behind that stops the stack late.
    for (const id of started) await stack.call('POST', `/api/v1/sandboxes/${id}/pause`);
  });

  it('cold, warm-pool claim and warm: the pool adds 3 requests to a cold start and 4 to a warm one', async () => {
    const cold = await start('idle');
    // The first start of `pooled` makes its pool record; the refill then starts the one standby (booting).
    await start('pooled');
    const [booting] = await waitFor('the standby of pooled', async () => {
      const list = await pools().listStandbys('pooled');
      return list.length ? list : undefined;
    });
    const noneReady = await withoutRefill(() => start('pooled'));
    expect(noneReady.body.start_phases).toMatchObject({ warm: false, cold_reason: 'no standby was ready' });
    // The standby as its pool check-in leaves it: ready, with the key its binding is sealed to.
    const { publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    expect(
      await pools().updateStandby(booting!.id, undefined, {
        status: 'ready',
        publicKey,
        heartbeatAt: new Date().toISOString(),
      }),
    ).toBeDefined();
    const warm = await withoutRefill(() => start('pooled'));
    expect(warm.body.start_phases).toMatchObject({ warm: true });
    const added = (requests: string[]) => {
      const rest = [...requests];
      for (const r of cold.requests) {
        const i = rest.indexOf(r);
        expect(i, `${r} in a start with a pool`).toBeGreaterThanOrEqual(0);
        rest.splice(i, 1);
      }
      return rest;
    };
    expect(cold.requests).toEqual(COLD_SANDBOX_START);
    expect(added(noneReady.requests)).toEqual(POOL_CLAIM);
    expect(added(warm.requests)).toEqual([...POOL_CLAIM, 'UpdateItemCommand@pool'].sort());
  });
});
