import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { systemKey } from '#shared/auth/system-keys.ts';
import { LlmCredentials } from '#shared/llm/credential.ts';
import { DynamoLlmLedger, llmKeys } from '#shared/llm/dynamo-ledger.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { logger } from '#shared/logging.ts';
import { protocolPaths } from '#shared/protocol.ts';
import { modelsHash } from '#shared/llm/platform-models.ts';
import {
  allEvents,
  startConversation,
  storedConversation,
  storedSandbox,
  waitForExecutionStatus,
} from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { processEnv, sandboxPids } from '#test/helpers/sandboxes.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/**
 * Platform LLMs over HTTP against the local stack (docs/platform-llms.md): models offered and held
 * to the plan, the start configuration that points the agent at the gateway with an `acsl.`
 * credential (never the platform key), the gateway with a scripted OpenAI-compatible and Anthropic
 * upstream on loopback that checks it receives the platform key and reports usage; metering, budgets,
 * rates, and what a hostile agent may try.
 */

const PLATFORM_KEY = 'sk-platform-9f3e1c0d7b2a4e6f8a1b3c5d7e9f0a2b';
const ANTHROPIC_KEY = 'sk-ant-platform-1a2b3c4d5e6f7a8b9c0d1e2f3a4b';

/** One upstream for both APIs; each request takes the next handler of its path's queue (default: a plain answer). */
interface Upstream {
  url: string;
  requests: { path: string; headers: IncomingMessage['headers']; body: any }[];
  next: { openai: Handler[]; anthropic: Handler[] };
  close(): Promise<void>;
}
type Handler = (body: any, res: ServerResponse) => void | Promise<void>;

const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })}\n\n`;

function openAiAnswer(body: any, res: ServerResponse, usage = { prompt_tokens: 1000, completion_tokens: 500 }) {
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
    );
  }
  sse(res);
  res.write(chunk('hel'));
  res.write(chunk('lo'));
  if (body.stream_options?.include_usage)
    res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** An assistant turn that calls one tool (the agent's SDK calls without streaming). */
function toolCallAnswer(res: ServerResponse, name: string, args: object) {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'chatcmpl-tool',
      object: 'chat.completion',
      model: 'up-gpt',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: `call_${randomUUID()}`, type: 'function', function: { name, arguments: JSON.stringify(args) } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
    }),
  );
}

function anthropicAnswer(body: any, res: ServerResponse) {
  const usage = { input_tokens: 50, cache_read_input_tokens: 10, cache_creation_input_tokens: 5 };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(
      JSON.stringify({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: [{ type: 'text', text: 'hi' }],
        stop_reason: 'end_turn',
        usage: { ...usage, output_tokens: 30 },
      }),
    );
  }
  sse(res);
  const ev = (type: string, data: object) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev('message_start', {
    message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { ...usage, output_tokens: 1 } },
  });
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hi there' } });
  ev('content_block_stop', { index: 0 });
  ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 30 } });
  ev('message_stop', {});
  res.end();
}

async function startUpstream(): Promise<Upstream> {
  const requests: Upstream['requests'] = [];
  const next: Upstream['next'] = { openai: [], anthropic: [] };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.url === '/openai/v1/chat/completions') {
      if (req.headers.authorization !== `Bearer ${PLATFORM_KEY}`) {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: 'bad key', type: 'invalid_request_error' } }));
      }
      return (next.openai.shift() ?? openAiAnswer)(body, res);
    }
    if (req.url === '/anthropic/v1/messages') {
      if (req.headers['x-api-key'] !== ANTHROPIC_KEY) {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'bad key' } }));
      }
      return (next.anthropic.shift() ?? anthropicAnswer)(body, res);
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    next,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let stack: TestStack;
let upstream: Upstream;
const ledger = () => new DynamoLlmLedger();
const saved = { ...process.env };
const PLAN_BASE = { max_running_sandboxes: 100, max_resource_factor: 8, sandbox_hours_per_month: 1_000_000 };
const MODELS = ['platform/gpt', 'platform/claude'];

beforeAll(async () => {
  upstream = await startUpstream();
  const dir = mkdtempSync(join(tmpdir(), 'platllm-'));
  const price = { input: 1, output: 2, cached_input: 0.5, cache_write_input: 1.25 };
  writeFileSync(
    join(dir, 'platform-llms.json'),
    JSON.stringify([
      {
        model: 'platform/gpt',
        provider: 'openai',
        upstream_model: 'up-gpt',
        base_url: `${upstream.url}/openai/v1`,
        api_key_env: 'TEST_PLATFORM_OPENAI_KEY',
        usd_per_mtok: price,
        markup: 0.5,
        max_output_tokens: 1000,
      },
      {
        model: 'platform/claude',
        provider: 'anthropic',
        upstream_model: 'up-claude',
        base_url: `${upstream.url}/anthropic/v1`,
        api_key_env: 'TEST_PLATFORM_ANTHROPIC_KEY',
        usd_per_mtok: price,
        markup: 0,
        max_output_tokens: 1000,
      },
      {
        model: 'platform/premium',
        provider: 'openai',
        upstream_model: 'up-premium',
        base_url: `${upstream.url}/openai/v1`,
        api_key_env: 'TEST_PLATFORM_OPENAI_KEY',
        usd_per_mtok: price,
        markup: 0,
        max_output_tokens: 1000,
      },
    ]),
  );
  const plan = (over: object) => ({
    ...PLAN_BASE,
    monthly_spend_usd: 1000,
    platform_models: MODELS,
    llm_requests_per_minute: 100_000,
    llm_tokens_per_minute: 100_000_000,
    ...over,
  });
  writeFileSync(
    join(dir, 'plans.json'),
    JSON.stringify({
      default_plan: 'test',
      plans: {
        test: plan({}),
        tight: plan({ llm_requests_per_minute: 2 }),
        tokens: plan({ llm_tokens_per_minute: 100 }),
        budget: plan({ monthly_spend_usd: 0.01 }),
        claude_only: plan({ platform_models: ['platform/claude'] }),
      },
    }),
  );
  process.env.TEST_PLATFORM_OPENAI_KEY = PLATFORM_KEY;
  process.env.TEST_PLATFORM_ANTHROPIC_KEY = ANTHROPIC_KEY;
  stack = await startTestStack({
    plansFile: join(dir, 'plans.json'),
    platformLlmsFile: join(dir, 'platform-llms.json'),
    sweepIntervalMs: 3_600_000,
  });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await upstream?.close();
  process.env = saved;
});

/** Moves an organization onto `plan` (stored directly: the operator route is plans.test.ts's). */
async function setPlan(orgId: string, plan: string) {
  const store = new DynamoAccountStore();
  const org = (await store.getOrg(orgId))!;
  expect(await store.replaceOrg({ ...org, plan })).toBe(true);
}

interface Platform {
  key: string;
  conversationId: string;
  sandboxId: string;
  credential: string;
  config: any;
}

/** A user with a platform model and a READY conversation; its start configuration as the sandbox fetched it. */
async function platformConversation(user: string, settings: object = {}, body: object = {}): Promise<Platform> {
  const key = await stack.newUser(user);
  const saved = await stack.call('POST', '/api/settings', { key, body: { llm_model: 'platform/gpt', ...settings } });
  expect(saved.status, saved.text).toBe(200);
  const task = await startConversation(stack, body, key);
  expect(task.status, task.detail ?? '').toBe('READY');
  const config = await startConfig(task.sandbox_id!, task.app_conversation_id);
  return {
    key,
    conversationId: task.app_conversation_id,
    sandboxId: task.sandbox_id!,
    credential: config.llm.api_key,
    config,
  };
}

/** Credentials signed with the service's own key (the stack's sealed `conversation-keys` key), on an optional clock. */
const serviceCredentials = (now?: () => number) =>
  new LlmCredentials(systemKey('conversation-keys', LocalSealer.fromKeyFile(join(stack.dataDir, 'secret.key'))), now);

/**
 * A conversation of `userId` (organization `orgId`, on `plan`) stored straight to the store with a
 * RUNNING sandbox record of its own, and its gateway credential minted as the bridge mints one for a
 * start configuration (shared/services/conversation-bridge.ts: the same claims, signed with the same
 * service key): many conversations can race without a sandbox process each. `now` mints at another
 * time (one more than an hour back: expired); `budgetMicroUsd` is the conversation's max_budget_per_task.
 */
async function mintedCredential(
  userId: string,
  orgId: string,
  plan: string,
  options: { budgetMicroUsd?: number; now?: () => number } = {},
): Promise<{ conversationId: string; sandboxId: string; credential: string }> {
  const sandbox = await storedSandbox(userId, { orgId, plan });
  const conversationId = await storedConversation(userId, { sandbox_id: sandbox.id, llm_model: 'platform/gpt' });
  const credential = await serviceCredentials(options.now).mint({
    u: userId,
    o: orgId,
    c: conversationId,
    v: 1,
    s: sandbox.id,
    g: 1,
    m: modelsHash(stack.services.platformLlms.allowed(plan)),
    ...(options.budgetMicroUsd === undefined ? {} : { b: options.budgetMicroUsd }),
  });
  return { conversationId, sandboxId: sandbox.id, credential };
}

async function startConfig(sandboxId: string, conversationId: string) {
  const path = protocolPaths.startConfig
    .replace('{sandbox_id}', sandboxId)
    .replace('{conversation_id}', conversationId);
  const res = await stack.call('GET', path, { key: await stack.sandboxKey(sandboxId) });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function llm(
  credential: string | null,
  body: object,
  options: { path?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (credential) headers.authorization = `Bearer ${credential}`;
  const res = await fetch(`${stack.url}${options.path ?? '/llm/v1/chat/completions'}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: json, requestId: res.headers.get('x-request-id')! };
}

const ask = { model: 'platform/gpt', messages: [{ role: 'user', content: 'say hello' }] };
/** The gateway's month item of an organization, as stored (committed, inflight, the open reservations). */
const monthItem = async (orgId: string) =>
  (
    await documentClient().send(
      new GetCommand({ TableName: tableName('usage'), Key: { pk: llmKeys.orgMonth(orgId), sk: `month#${month()}` } }),
    )
  ).Item;
const month = () => new Date().toISOString().slice(0, 7);

describe('platform models in options, settings and the start', () => {
  it('lists them (platform: true in the Canvas search) beside the user-key models', async () => {
    const models = await stack.call('GET', '/api/options/models');
    expect(models.body).toEqual(expect.arrayContaining(['platform/gpt', 'platform/claude', 'openai/gpt-4o']));
    const search = await stack.call('GET', '/api/v1/config/models/search?provider__eq=platform');
    expect(search.body.items.map((i: any) => [i.name, i.platform])).toEqual([
      ['gpt', true],
      ['claude', true],
      ['premium', true],
    ]);
  });

  it('saves a platform model with no llm_api_key; refuses one the plan forbids (403 model_not_in_plan) at save and at start', async () => {
    const key = await stack.newUser('policy-user');
    const refused = await stack.call('POST', '/api/settings', { key, body: { llm_model: 'platform/premium' } });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: expect.stringContaining('platform/premium'), code: 'model_not_in_plan' });
    expect((await stack.call('POST', '/api/settings', { key, body: { llm_model: 'platform/gpt' } })).status).toBe(200);
    const start = await stack.call('POST', '/api/v1/app-conversations', {
      key,
      body: { llm_model: 'platform/premium' },
    });
    expect(start.status).toBe(403);
    expect(start.body.code).toBe('model_not_in_plan');
  });

  it('points the agent at the gateway with an acsl. credential: the platform key is in no start configuration, env or event', async () => {
    const p = await platformConversation(
      'e2e-user',
      {},
      {
        initial_message: { role: 'user', content: [{ type: 'text', text: 'Say hello' }], run: true },
      },
    );
    expect(p.config.llm).toEqual({
      model: 'platform/gpt',
      api_key: expect.stringMatching(/^acsl\./),
      base_url: `${stack.url}/llm/v1`,
    });
    expect(JSON.stringify(p.config)).not.toContain(PLATFORM_KEY);
    // The agent's own call went through the gateway, which sent the platform key upstream.
    const seen = await waitFor(
      'the agent calling the gateway',
      async () => upstream.requests.filter((r) => r.body.model === 'up-gpt'),
      { until: (rs) => rs.length > 0, timeoutMs: 60_000 },
    );
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${PLATFORM_KEY}`);
    const events = await waitFor('the agent answering', () => allEvents(stack, p.conversationId, p.key), {
      until: (es) => es.some((e) => e.source === 'agent' && e.kind === 'MessageEvent'),
      timeoutMs: 60_000,
    });
    expect(JSON.stringify(events)).not.toContain(PLATFORM_KEY);
    expect(JSON.stringify(events)).not.toContain(p.credential);
    for (const pid of sandboxPids(p.sandboxId))
      expect(JSON.stringify(processEnv(pid) ?? {})).not.toContain(PLATFORM_KEY);
    // Metered: the usage route shows the tokens and their cost.
    const usage = await waitFor('the usage', () => stack.call('GET', '/api/v1/usage?group_by=model', { key: p.key }), {
      until: (r) => r.body?.items?.length > 0,
      timeoutMs: 10_000,
    });
    expect(usage.body.items[0]).toEqual(
      expect.objectContaining({ model: 'platform/gpt', llm_input_tokens: 1000, llm_output_tokens: 500 }),
    );
  });
});

describe('the gateway', () => {
  let p: Platform;
  beforeAll(async () => {
    p = await platformConversation('gw-user');
  }, 120_000);

  it('forwards a call with the platform key and the upstream model, and meters one record per call at exact prices', async () => {
    const res = await llm(p.credential, {
      ...ask,
      max_tokens: 50_000,
      tools: [{ type: 'function', function: { name: 'f', parameters: {} } }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.choices[0].message.content).toBe('hello');
    const sent = upstream.requests.at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${PLATFORM_KEY}`);
    // Capped at the model's max_output_tokens; the tools pass through.
    expect(sent.body).toEqual(expect.objectContaining({ model: 'up-gpt', max_tokens: 1000, tools: expect.any(Array) }));
    const rec = await ledger().get(res.requestId);
    // A conversation without a budget keeps no counter of its own (one settled into unreserved would drift).
    expect(await ledger().conversationCommitted(p.conversationId)).toBe(0);
    // (1000 x 1 + 500 x 2) x 1.5 = 3000 micro-USD.
    expect(rec).toEqual(
      expect.objectContaining({
        model: 'platform/gpt',
        input: 1000,
        output: 500,
        cachedInput: 0,
        costMicroUsd: 3000,
        estimated: false,
      }),
    );
  });

  it('streams as the upstream sends (the first token before the upstream ends) and forces include_usage', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    upstream.next.openai.push(async (body, res) => {
      sse(res);
      res.write(chunk('first'));
      await held;
      res.write(
        `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } } })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
      expect(body.stream_options).toEqual({ include_usage: true });
    });
    const res = await fetch(`${stack.url}/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask, stream: true }),
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('first');
    release();
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain('[DONE]');
    const rec = await waitFor('the record', () => ledger().get(res.headers.get('x-request-id')!), {
      until: (r) => !!r,
      timeoutMs: 5000,
    });
    // 6 uncached x 1 + 4 cached x 0.5 + 2 x 2 = 12, x 1.5 = 18.
    expect(rec).toEqual(expect.objectContaining({ input: 6, cachedInput: 4, output: 2, costMicroUsd: 18 }));
  });

  it('charges a cut stream for what was streamed, marked estimated; an upstream error without usage is not charged', async () => {
    upstream.next.openai.push((_b, res) => {
      sse(res);
      res.write(chunk('x'.repeat(40)));
      // Cut after the headers and the first chunk reached the gateway.
      setTimeout(() => res.destroy(), 100);
    });
    const cut = await llm(p.credential, { ...ask, stream: true });
    const rec = await waitFor('the record', () => ledger().get(cut.requestId), { until: (r) => !!r, timeoutMs: 5000 });
    expect(rec).toEqual(expect.objectContaining({ estimated: true, output: 10 }));

    const before = await ledger().committed(await stack.orgOf(p.key), month());
    upstream.next.openai.push((_b, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'upstream broke', type: 'server_error' } }));
    });
    const failed = await llm(p.credential, ask);
    expect(failed.status).toBe(500);
    expect(failed.body.error.message).toBe('upstream broke');
    expect(await ledger().get(failed.requestId)).toBeUndefined();
    // The reservation was given back whole.
    expect(await ledger().committed(await stack.orgOf(p.key), month())).toBe(before);
  });

  it('answers a repeated Idempotency-Key with the first answer (not forwarded, not charged); another body with 422', async () => {
    const orgId = await stack.orgOf(p.key);
    const first = await llm(p.credential, { ...ask, max_tokens: 7 }, { headers: { 'idempotency-key': 'retry-1' } });
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const calls = upstream.requests.length;
    const committed = await ledger().committed(orgId, month());
    // The same request with its members in another order: the same request.
    const again = await llm(
      p.credential,
      { max_tokens: 7, messages: ask.messages, model: ask.model },
      { headers: { 'idempotency-key': 'retry-1' } },
    );
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    // Its x-request-id names the call that was charged.
    expect(again.requestId).toBe(first.requestId);
    expect(upstream.requests.length).toBe(calls);
    expect(await ledger().committed(orgId, month())).toBe(committed);

    const other = await llm(p.credential, { ...ask, max_tokens: 8 }, { headers: { 'idempotency-key': 'retry-1' } });
    expect(other.status).toBe(422);
    expect(other.body.error).toEqual(
      expect.objectContaining({ code: 'idempotency_key_reused', message: expect.stringContaining('Idempotency-Key') }),
    );
    expect(upstream.requests.length).toBe(calls);
    // Kept sealed: no plaintext of the answer at rest.
    const kept = (
      await documentClient().send(
        new GetCommand({
          TableName: tableName('keys'),
          Key: {
            keyId: `llmidem:${p.conversationId}:${createHash('sha256').update('retry-1').digest('base64url')}`,
          },
        }),
      )
    ).Item!;
    expect(kept).toEqual(expect.objectContaining({ state: 'completed', requestId: first.requestId }));
    expect(String(kept.answerKey)).toMatch(/^local1\./);
    expect(Buffer.from(kept.answer).toString('latin1')).not.toContain('hello');

    // A stream: the repeat gets the SSE bytes as they were sent.
    const streamed = await llm(p.credential, { ...ask, stream: true }, { headers: { 'idempotency-key': 'stream-1' } });
    expect(streamed.text).toContain('[DONE]');
    const replayed = await llm(p.credential, { ...ask, stream: true }, { headers: { 'idempotency-key': 'stream-1' } });
    expect(replayed.headers.get('content-type')).toBe('text/event-stream');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.text).toBe(streamed.text);
    expect(upstream.requests.length).toBe(calls + 1);
    // A key is 1-255 visible ASCII characters: 400 naming the header, nothing forwarded.
    for (const bad of ['has space', 'k'.repeat(256), ''])
      expect((await llm(p.credential, ask, { headers: { 'idempotency-key': bad } })).body.error.code, bad).toBe(
        'idempotency_key',
      );
    expect(upstream.requests.length).toBe(calls + 1);
  });

  it('forwards one upstream call and meters one record for 20 racing repeats (409 with Retry-After while it runs)', async () => {
    const orgId = await stack.orgOf(p.key);
    const before = await ledger().committed(orgId, month());
    const calls = upstream.requests.length;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    upstream.next.openai.push(async (body, res) => {
      await held;
      openAiAnswer(body, res);
    });
    const headers = { 'idempotency-key': 'race-1' };
    let settled = 0;
    const racers = Array.from({ length: 20 }, () =>
      llm(p.credential, ask, { headers }).finally(() => {
        settled++;
      }),
    );
    // All but the one that claimed the key answer while it is held upstream.
    await waitFor('19 racers answered', async () => settled, { until: (n) => n === 19, timeoutMs: 30_000 });
    release();
    const results = await Promise.all(racers);
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) {
      expect(r.status).toBe(409);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.body.error.code).toBe('idempotency_key_in_progress');
      expect(await ledger().get(r.requestId)).toBeUndefined();
    }
    expect(upstream.requests.length).toBe(calls + 1);
    const rec = await ledger().get(ok[0]!.requestId);
    expect(rec?.costMicroUsd).toBe(3000);
    expect(await ledger().committed(orgId, month())).toBe(before + 3000);
    // Once it ran, the repeats get its answer.
    const after = await Promise.all(Array.from({ length: 5 }, () => llm(p.credential, ask, { headers })));
    for (const r of after) {
      expect(r.headers.get('idempotent-replayed')).toBe('true');
      expect(r.text).toBe(ok[0]!.text);
    }
    expect(upstream.requests.length).toBe(calls + 1);
    expect(await ledger().committed(orgId, month())).toBe(before + 3000);
  });

  it('keeps nothing of an upstream error or a cut stream (a repeat runs again), nor an answer over the bound (409); frees an expired key or a dead claim', async () => {
    const calls = upstream.requests.length;
    upstream.next.openai.push((_b, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'upstream broke', type: 'server_error' } }));
    });
    const failed = await llm(p.credential, ask, { headers: { 'idempotency-key': 'fails-1' } });
    expect(failed.status).toBe(500);
    const rerun = await llm(p.credential, ask, { headers: { 'idempotency-key': 'fails-1' } });
    expect(rerun.status).toBe(200);
    expect(rerun.headers.get('idempotent-replayed')).toBeNull();
    expect(upstream.requests.length).toBe(calls + 2);

    upstream.next.openai.push((_b, res) => {
      sse(res);
      res.write(chunk('x'.repeat(40)));
      setTimeout(() => res.destroy(), 100);
    });
    const cut = await llm(p.credential, { ...ask, stream: true }, { headers: { 'idempotency-key': 'cut-1' } });
    expect((await ledger().get(cut.requestId))?.estimated).toBe(true);
    const whole = await llm(p.credential, { ...ask, stream: true }, { headers: { 'idempotency-key': 'cut-1' } });
    expect(whole.headers.get('idempotent-replayed')).toBeNull();
    expect(whole.text).toContain('[DONE]');
    expect(await ledger().get(whole.requestId)).toEqual(expect.objectContaining({ estimated: false }));
    expect(upstream.requests.length).toBe(calls + 4);

    // Incompressible: over 300 KB however it is packed.
    const huge = randomBytes(600 * 1024).toString('base64');
    upstream.next.openai.push((body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-big',
          object: 'chat.completion',
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: huge }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 10 },
        }),
      );
    });
    const big = await llm(p.credential, ask, { headers: { 'idempotency-key': 'big-1' } });
    expect(big.body.choices[0].message.content).toBe(huge);
    const orgId = await stack.orgOf(p.key);
    const committed = await ledger().committed(orgId, month());
    const repeat = await llm(p.credential, ask, { headers: { 'idempotency-key': 'big-1' } });
    expect(repeat.status).toBe(409);
    expect(repeat.body.error.code).toBe('idempotency_answer_too_large');
    expect(upstream.requests.length).toBe(calls + 5);
    expect(await ledger().committed(orgId, month())).toBe(committed);

    // A key kept past its 24 hours, and a claim whose gateway died (in progress past its time): free again.
    const keyItem = (key: string) => ({
      keyId: `llmidem:${p.conversationId}:${createHash('sha256').update(key).digest('base64url')}`,
    });
    const past = Math.floor(Date.now() / 1000) - 1;
    await documentClient().send(
      new UpdateCommand({
        TableName: tableName('keys'),
        Key: keyItem('big-1'),
        UpdateExpression: 'SET expiresAtEpoch = :t',
        ExpressionAttributeValues: { ':t': past },
      }),
    );
    await documentClient().send(
      new PutCommand({
        TableName: tableName('keys'),
        Item: {
          ...keyItem('dead-1'),
          requestId: 'dead-gateway',
          requestHash: 'x',
          state: 'in_progress',
          inProgressUntil: past,
          expiresAtEpoch: past + 86_400,
        },
      }),
    );
    for (const key of ['big-1', 'dead-1']) {
      const again = await llm(p.credential, ask, { headers: { 'idempotency-key': key } });
      expect(again.status, key).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
    }
    expect(upstream.requests.length).toBe(calls + 7);
  });

  it('passes images through unchanged (an image_url part; an Anthropic image block) and meters the call', async () => {
    // A 1x1 PNG.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png}`, detail: 'low' } },
        ],
      },
    ];
    upstream.next.openai.push((body, res) => {
      openAiAnswer(body, res, { prompt_tokens: 100, completion_tokens: 10 });
    });
    const res = await llm(p.credential, { ...ask, messages });
    expect(res.status, res.text).toBe(200);
    const sent = upstream.requests.at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${PLATFORM_KEY}`);
    expect(sent.body.messages).toEqual(messages);
    // (100 x 1 + 10 x 2) x 1.5 = 180 micro-USD.
    expect(await ledger().get(res.requestId)).toEqual(
      expect.objectContaining({ model: 'platform/gpt', input: 100, output: 10, costMicroUsd: 180 }),
    );

    // Anthropic's image block, to a model of the same plan at its own path.
    const anthropicMessages = [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
          { type: 'text', text: 'What is in this picture?' },
        ],
      },
    ];
    const claude = await llm(
      null,
      { model: 'platform/claude', max_tokens: 100, messages: anthropicMessages },
      { path: '/llm/v1/messages', headers: { 'x-api-key': p.credential } },
    );
    expect(claude.status, claude.text).toBe(200);
    const sentClaude = upstream.requests.at(-1)!;
    expect(sentClaude.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(sentClaude.body.messages).toEqual(anthropicMessages);
    expect(await ledger().get(claude.requestId)).toEqual(
      expect.objectContaining({ model: 'platform/claude', input: 50, output: 30, costMicroUsd: 121 }),
    );
  });

  it('logs each call as one llm.call line (model, tokens, cost, latency, request id), never its prompt or completion', async () => {
    // The stack runs in this process: its log lines are what this process writes (at INFO, as `npm start` logs).
    const prompt = `prompt-text-${randomUUID()}`;
    const completion = `completion-text-${randomUUID()}`;
    const written: string[] = [];
    const level = logger.getLevelName();
    logger.setLogLevel('INFO');
    const spies = [process.stdout, process.stderr].map((stream) =>
      vi.spyOn(stream, 'write').mockImplementation((chunk: any) => {
        written.push(String(chunk));
        return true;
      }),
    );
    const answer = (body: any, res: ServerResponse) => {
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({
            id: 'chatcmpl-log',
            object: 'chat.completion',
            choices: [{ index: 0, message: { role: 'assistant', content: completion }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 40, completion_tokens: 8 },
          }),
        );
      }
      sse(res);
      res.write(chunk(completion));
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 40, completion_tokens: 8 } })}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    const messages = [{ role: 'user', content: prompt }];
    let plain: Awaited<ReturnType<typeof llm>>;
    let streamed: Awaited<ReturnType<typeof llm>>;
    try {
      upstream.next.openai.push(
        (b, r) => {
          answer(b, r);
        },
        (b, r) => {
          answer(b, r);
        },
      );
      plain = await llm(p.credential, { ...ask, messages });
      streamed = await llm(p.credential, { ...ask, messages, stream: true });
    } finally {
      for (const spy of spies) spy.mockRestore();
      logger.setLogLevel(level);
    }
    // The answers carried the completion: the logs had it to hand.
    expect(plain.body.choices[0].message.content).toBe(completion);
    expect(streamed.text).toContain(completion);
    const lines = written
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    for (const res of [plain, streamed]) {
      const calls = lines.filter((l) => l.message === 'llm.call' && l.requestId === res.requestId);
      expect(calls).toEqual([
        expect.objectContaining({
          level: 'INFO',
          model: 'platform/gpt',
          conversationId: p.conversationId,
          status: 200,
          // Counts, not masked as if secrets (attributes named "...Tokens" are).
          usage: { input: 40, output: 8, cachedInput: 0, cacheWriteInput: 0 },
          // (40 x 1 + 8 x 2) x 1.5
          costMicroUsd: 84,
          estimated: false,
          latencyMs: expect.any(Number),
        }),
      ]);
    }
    expect(written.join('')).not.toContain(prompt);
    expect(written.join('')).not.toContain(completion);
  });

  it("serves Anthropic's messages API (credential in x-api-key), streaming and not, with cache tokens metered", async () => {
    const key = await stack.newUser('claude-user');
    await stack.call('POST', '/api/settings', { key, body: { llm_model: 'platform/claude' } });
    const task = await startConversation(stack, {}, key);
    const config = await startConfig(task.sandbox_id!, task.app_conversation_id);
    expect(config.llm).toEqual(expect.objectContaining({ model: 'platform/claude', api: 'anthropic' }));
    const body = { model: 'platform/claude', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
    const plain = await llm(null, body, { path: '/llm/v1/messages', headers: { 'x-api-key': config.llm.api_key } });
    expect(plain.status, plain.text).toBe(200);
    expect(upstream.requests.at(-1)!.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(upstream.requests.at(-1)!.body.model).toBe('up-claude');
    // 50 x 1 + 30 x 2 + 10 x 0.5 + 5 x 1.25 = 121.25 -> 121
    expect(await ledger().get(plain.requestId)).toEqual(
      expect.objectContaining({ input: 50, output: 30, cachedInput: 10, cacheWriteInput: 5, costMicroUsd: 121 }),
    );
    const streamed = await llm(
      null,
      { ...body, stream: true },
      { path: '/llm/v1/messages', headers: { 'x-api-key': config.llm.api_key } },
    );
    expect(streamed.text).toContain('message_stop');
    const rec = await waitFor('the record', () => ledger().get(streamed.requestId), {
      until: (r) => !!r,
      timeoutMs: 5000,
    });
    expect(rec).toEqual(
      expect.objectContaining({ input: 50, output: 30, cachedInput: 10, cacheWriteInput: 5, estimated: false }),
    );
    // A platform model of the other API at the wrong path: 400 naming the model.
    const wrong = await llm(config.llm.api_key, { ...ask, model: 'platform/claude' });
    expect(wrong.status).toBe(400);
  });
});

describe('renewal', () => {
  it("keeps the agent calling the model past its first credential's expiry, the renewed one masked", async () => {
    // Credentials of a few seconds instead of an hour: the test shortens every mint itself.
    const TTL = 5;
    const mint = LlmCredentials.prototype.mint;
    const verify = LlmCredentials.prototype.verify;
    const accepted: { c: string; e: number; key: string; at: number }[] = [];
    vi.spyOn(LlmCredentials.prototype, 'mint').mockImplementation(function (this: LlmCredentials, claims) {
      return mint.call(this, claims, TTL);
    });
    vi.spyOn(LlmCredentials.prototype, 'verify').mockImplementation(async function (this: LlmCredentials, key) {
      const claims = await verify.call(this, key);
      if (claims) accepted.push({ c: claims.c, e: claims.e, key, at: Date.now() });
      return claims;
    });
    try {
      let conversationId = '';
      const used = () => accepted.filter((a) => a.c === conversationId);
      // 1: a command that outlasts the credential; 2 (on a renewed one): echo the credential it came with; 3: done.
      upstream.next.openai.push(
        (_b, res) => toolCallAnswer(res, 'execute_bash', { command: `sleep ${TTL + 1}` }),
        (_b, res) => toolCallAnswer(res, 'execute_bash', { command: `echo ${used().at(-1)!.key}` }),
        (b, res) => {
          openAiAnswer(b, res);
        },
      );
      const p = await platformConversation(
        'renewal-user',
        {},
        { initial_message: { role: 'user', content: [{ type: 'text', text: 'Take your time' }], run: true } },
      );
      conversationId = p.conversationId;
      const done = await waitForExecutionStatus(stack, p.conversationId, ['finished', 'error', 'paused'], p.key);
      expect(done.execution_status).toBe('finished');
      const [first, ...later] = used();
      // A call went through after the first credential expired, on another one the sandbox fetched itself.
      expect(later.some((a) => a.key !== first!.key && a.at > first!.e * 1000)).toBe(true);
      const renewed = [...new Set(later.map((a) => a.key))].filter((k) => k !== first!.key);
      const events = await allEvents(stack, p.conversationId, p.key);
      const echoed = events.find((e) => e.kind === 'ObservationEvent' && JSON.stringify(e).includes('<secret hidden>'));
      expect(echoed, JSON.stringify(events)).toBeDefined();
      // Masked in every event (the command the model wrote included) and in the result the model read.
      const toolResults = JSON.stringify(upstream.requests.at(-1)!.body.messages.filter((m: any) => m.role === 'tool'));
      expect(toolResults).toContain('<secret hidden>');
      for (const k of [first!.key, ...renewed]) {
        expect(JSON.stringify(events)).not.toContain(k);
        expect(toolResults).not.toContain(k);
      }
    } finally {
      vi.restoreAllMocks();
    }
  }, 90_000);
});

describe('budgets and rates', () => {
  it("refuses over the conversation's max_budget_per_task with 402 in OpenAI's shape", async () => {
    // A reservation is (bytes / 3) x 1 + 1000 x 2, x 1.5: over 3000 micro-USD, above a 0.002 USD budget.
    const calls = upstream.requests.length;
    const p = await platformConversation(
      'budget-conv',
      { max_budget_per_task: 0.002 },
      { initial_message: { role: 'user', content: [{ type: 'text', text: 'Say hello' }], run: true } },
    );
    const res = await llm(p.credential, ask);
    expect(res.status).toBe(402);
    expect(res.body).toEqual({
      error: { message: expect.any(String), type: 'budget_exceeded', code: 'max_budget_per_task' },
    });
    // The agent's own call got the same 402: an AgentErrorEvent and a paused conversation, not a crash or a hang.
    const paused = await waitForExecutionStatus(stack, p.conversationId, ['paused', 'error'], p.key);
    expect(paused.execution_status).toBe('paused');
    const events = await allEvents(stack, p.conversationId, p.key);
    const error = events.find((e) => e.kind === 'AgentErrorEvent');
    expect(error?.error).toMatch(/HTTP 402.*budget is spent: the conversation is paused/);
    // Tried once, not retried (a 402 cannot pass by waiting), and never forwarded upstream.
    expect(events.filter((e) => e.key === 'llm_retry')).toEqual([]);
    expect(upstream.requests.length).toBe(calls);
    // The sandbox goes on: the conversation is paused, not its sandbox.
    expect((await stack.call('GET', `/api/v1/sandboxes?id=${p.sandboxId}`, { key: p.key })).body[0].status).toBe(
      'RUNNING',
    );
  });

  it('holds the organization spend limit under 20 racing calls: never over it, nothing left reserved', async () => {
    const p = await platformConversation('budget-race');
    const orgId = await stack.orgOf(p.key);
    await setPlan(orgId, 'budget'); // 10000 micro-USD; a reservation is ~3000, a call costs 3000 x (100/1500)
    const results = await Promise.all(
      Array.from({ length: 20 }, () => llm(p.credential, { ...ask, max_tokens: 1000 })),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok.length + refused.length).toBe(20);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused)
      expect(r.body.error).toEqual(expect.objectContaining({ type: 'budget_exceeded', code: 'monthly_spend_usd' }));
    const records = await Promise.all(ok.map((r) => ledger().get(r.requestId)));
    const spent = records.reduce((s, r) => s + r!.costMicroUsd, 0);
    expect(spent).toBeLessThanOrEqual(10_000);
    // Every reservation settled: what is committed is exactly what was charged.
    expect(await ledger().committed(orgId, month())).toBe(spent);
  });

  it("holds the organization spend limit under 20 racing sandboxes, each with its own conversation's credential", async () => {
    const userId = 'budget-race-20';
    const key = await stack.newUser(userId);
    const orgId = await stack.orgOf(key);
    await setPlan(orgId, 'budget'); // 10,000 micro-USD a month; a call reserves about 3,050 and costs 3,000
    const racers = await Promise.all(Array.from({ length: 20 }, () => mintedCredential(userId, orgId, 'budget')));
    expect(new Set(racers.map((r) => r.conversationId)).size).toBe(20);
    const calls = upstream.requests.length;
    const results = await Promise.all(racers.map((r) => llm(r.credential, { ...ask, max_tokens: 1000 })));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    // Every refusal is a 402 in OpenAI's shape, never forwarded, charged nothing.
    for (const r of refused) {
      expect(r.status, r.text).toBe(402);
      expect(r.body).toEqual({
        error: { message: expect.any(String), type: 'budget_exceeded', code: 'monthly_spend_usd' },
      });
      expect(await ledger().get(r.requestId)).toBeUndefined();
    }
    expect(upstream.requests.length).toBe(calls + ok.length);
    const records = await Promise.all(ok.map((r) => ledger().get(r.requestId)));
    const spent = records.reduce((s, r) => s + r!.costMicroUsd, 0);
    // The bound is the limit plus one call per racer; reserving first holds it to the limit itself.
    expect(spent).toBeLessThanOrEqual(10_000);
    expect(spent).toBeLessThanOrEqual(10_000 + 20 * 3000);
    const item = await monthItem(orgId);
    expect(item?.committed).toBe(spent);
    expect(item?.inflight).toBe(0);
    // Each conversation's calls were its own (no budget of its own: no counter).
    expect(new Set(records.map((r) => r!.conversationId)).size).toBe(ok.length);
  });

  it("holds a conversation's max_budget_per_task under 20 racing calls on its credential", async () => {
    const userId = 'task-budget-race';
    const key = await stack.newUser(userId);
    const orgId = await stack.orgOf(key);
    // 0.01 USD for the task, the organization's limit far above it.
    const c = await mintedCredential(userId, orgId, 'test', { budgetMicroUsd: 10_000 });
    const calls = upstream.requests.length;
    const results = await Promise.all(Array.from({ length: 20 }, () => llm(c.credential, ask)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.status, r.text).toBe(402);
      expect(r.body.error).toEqual(expect.objectContaining({ type: 'budget_exceeded', code: 'max_budget_per_task' }));
      expect(await ledger().get(r.requestId)).toBeUndefined();
    }
    expect(upstream.requests.length).toBe(calls + ok.length);
    const spent = (await Promise.all(ok.map((r) => ledger().get(r.requestId)))).reduce(
      (t, r) => t + r!.costMicroUsd,
      0,
    );
    expect(spent).toBeLessThanOrEqual(10_000);
    expect(await ledger().conversationCommitted(c.conversationId)).toBe(spent);
    expect(await ledger().committed(orgId, month())).toBe(spent);
  });

  it('releases a reservation whose settle never came (its gateway died) once expired, exactly once under 10 racing calls', async () => {
    const p = await platformConversation('leak-user', { max_budget_per_task: 0.012 });
    const orgId = await stack.orgOf(p.key);
    await setPlan(orgId, 'budget'); // 10,000 micro-USD a month; a call reserves about 3,050 and costs 3,000
    const nowS = Math.floor(Date.now() / 1000);
    // What a gateway killed between reserve and settle leaves behind: the counters moved, the reservation
    // open, and no settle ever. One whose expiry has not come (it may still be a live call), one past it.
    const planted = (requestId: string, expiresAtEpoch: number) => ({
      requestId,
      orgId,
      month: month(),
      conversationId: p.conversationId,
      microUsd: 9_000,
      conversationBudget: true,
      expiresAtEpoch,
    });
    const anyLimit = { orgMaxMicroUsd: 1e12, concurrency: 1000, conversationMaxMicroUsd: 1e12 };
    const RACERS = 10;
    expect(await ledger().reserve(planted('killed-live', nowS + 600), anyLimit)).toBeNull();
    expect(await ledger().reserve(planted('killed-expired', nowS - 1), anyLimit)).toBeNull();
    const race = () => Promise.all(Array.from({ length: RACERS }, () => llm(p.credential, ask)));

    // The unexpired one still holds the budget: every racer is refused; the expired one is released once.
    const held = await race();
    expect(held.map((r) => r.status)).toEqual(Array(RACERS).fill(402));
    expect(await monthItem(orgId)).toEqual(
      expect.objectContaining({ committed: 9_000, inflight: 1, open: new Set([`killed-live|${nowS + 600}|9000`]) }),
    );

    // Its call ends (charged nothing): now the budget takes calls up to the limit, never over it.
    await ledger().settle(planted('killed-live', nowS + 600), 0);
    const results = await race();
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    expect(results.filter((r) => r.status !== 200).map((r) => r.status)).toEqual(Array(RACERS - ok.length).fill(402));
    const spent = (await Promise.all(ok.map((r) => ledger().get(r.requestId)))).reduce(
      (t, r) => t + r!.costMicroUsd,
      0,
    );
    expect(spent).toBeLessThanOrEqual(10_000);
    // Exact: the organization's counter is what was charged, nothing in flight, nothing open; the
    // conversation's (whose expired reservation was released when it stood in the way) the same.
    const item = await monthItem(orgId);
    expect(item?.committed).toBe(spent);
    expect(item?.inflight).toBe(0);
    expect(item?.open).toBeUndefined();
    expect(await ledger().conversationCommitted(p.conversationId)).toBe(spent);
  });

  it('answers 429 with Retry-After over the requests per minute, and over the tokens per minute', async () => {
    const p = await platformConversation('rate-user');
    const orgId = await stack.orgOf(p.key);
    await setPlan(orgId, 'tight');
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push(await llm(p.credential, ask));
    expect(codes.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(Number(codes[2]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(codes[2]!.body.error.code).toBe('llm_requests_per_minute');

    const q = await platformConversation('token-user');
    await setPlan(await stack.orgOf(q.key), 'tokens');
    expect((await llm(q.credential, ask)).status).toBe(200); // 1500 tokens: over 100 from now on
    const over = await llm(q.credential, ask);
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('llm_tokens_per_minute');
  });
});

describe('limits of the gateway itself', () => {
  it('caps calls in flight per organization (a conditional counter), and gives the slot back on settle', async () => {
    const expiresAtEpoch = Math.floor(Date.now() / 1000) + 600;
    const r = (i: number) => ({
      requestId: `conc-${i}`,
      orgId: 'org-concurrency',
      month: month(),
      conversationId: 'c'.repeat(32),
      microUsd: 10,
      conversationBudget: false,
      expiresAtEpoch,
    });
    const limits = { orgMaxMicroUsd: 1_000_000, concurrency: 3, conversationMaxMicroUsd: null };
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => ledger().reserve(r(i), limits)));
    const admitted = results.flatMap((x, i) => (x === null ? [i] : []));
    expect(admitted).toHaveLength(3);
    for (const x of results.filter((x) => x !== null)) expect(x).toEqual({ refused: 'concurrency', used: 3 });
    await ledger().settle(r(admitted[0]!), 4);
    expect(await ledger().reserve(r(10), limits)).toBeNull();
    expect(await ledger().committed('org-concurrency', month())).toBe(10 + 10 + 4 + 10);
  });

  it("refuses a request over Lambda's 6 MB with 413 in the provider's shape", async () => {
    const big = { ...ask, messages: [{ role: 'user', content: 'x'.repeat(6 * 1024 * 1024 + 10) }] };
    const res = await llm('acsl.x.y', big);
    expect(res.status).toBe(413);
    expect(res.body.error.type).toBe('request_too_large');
    const anthropic = await llm('acsl.x.y', big, { path: '/llm/v1/messages' });
    expect(anthropic.body).toEqual({ type: 'error', error: expect.objectContaining({ type: 'request_too_large' }) });
  });
});

describe('a hostile agent', () => {
  let p: Platform;
  beforeAll(async () => {
    p = await platformConversation('hostile-user');
  }, 120_000);

  it('gets 401 with no credential, a forged or altered one, or any other kind of key; and is metered nothing', async () => {
    const orgId = await stack.orgOf(p.key);
    const before = await ledger().committed(orgId, month());
    const calls = upstream.requests.length;
    const [, body, mac] = p.credential.split('.');
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString());
    const other = Buffer.from(JSON.stringify({ ...claims, c: 'f'.repeat(32), e: claims.e + 10_000 })).toString(
      'base64url',
    );
    const scoped = (await stack.call('GET', `/api/v1/app-conversations?ids=${p.conversationId}`, { key: p.key }))
      .body[0].session_api_key;
    for (const credential of [
      null,
      `acsl.${other}.${mac}`,
      `${p.credential.slice(0, -2)}AA`,
      scoped,
      p.key,
      (await stack.sandboxKey(p.sandboxId))!,
      PLATFORM_KEY,
    ]) {
      const res = await llm(credential, ask);
      expect(res.status, String(credential)).toBe(401);
      expect(res.body.error.type).toBe('authentication_error');
    }
    expect(upstream.requests.length).toBe(calls);
    expect(await ledger().committed(orgId, month())).toBe(before);
  });

  it('gets 401 for an expired credential (authentic, minted over an hour ago), and is metered nothing', async () => {
    const orgId = await stack.orgOf(p.key);
    const before = await ledger().committed(orgId, month());
    const calls = upstream.requests.length;
    // Its own claims, minted with the service's key on a clock an hour and a minute back: only the expiry is wrong.
    const { e: _e, i: _i, ...claims } = JSON.parse(Buffer.from(p.credential.split('.')[1]!, 'base64url').toString());
    const expired = await serviceCredentials(() => Date.now() - 3_660_000).mint(claims);
    const refused = [
      await llm(expired, ask),
      await llm(null, ask, { headers: { 'x-session-api-key': expired } }),
      await llm(null, { ...ask, stream: true }, { headers: { 'x-session-api-key': expired } }),
      await llm(
        null,
        { model: 'platform/claude', max_tokens: 10, messages: ask.messages },
        { path: '/llm/v1/messages', headers: { 'x-api-key': expired } },
      ),
    ];
    for (const r of refused) {
      expect(r.status, r.text).toBe(401);
      // OpenAI's shape and Anthropic's both carry error.type and error.message.
      expect(r.body.error).toEqual(
        expect.objectContaining({ type: 'authentication_error', message: expect.stringMatching(/expired/) }),
      );
      expect(await ledger().get(r.requestId)).toBeUndefined();
    }
    expect(upstream.requests.length).toBe(calls);
    expect(await ledger().committed(orgId, month())).toBe(before);
    // The same claims minted now pass: what refused it was its expiry.
    expect((await llm(await serviceCredentials().mint(claims), ask)).status).toBe(200);
  });

  it('gets 403 model_not_in_plan with the credential of a conversation whose plan forbids the model, metered nothing', async () => {
    const userId = 'hostile-plan';
    const orgId = await stack.orgOf(await stack.newUser(userId));
    await setPlan(orgId, 'claude_only');
    const c = await mintedCredential(userId, orgId, 'claude_only');
    const calls = upstream.requests.length;
    for (const model of ['platform/gpt', 'platform/premium']) {
      const res = await llm(c.credential, { ...ask, model });
      expect(res.status, model).toBe(403);
      expect(res.body.error).toEqual(expect.objectContaining({ type: 'permission_error', code: 'model_not_in_plan' }));
      expect(await ledger().get(res.requestId)).toBeUndefined();
    }
    expect(upstream.requests.length).toBe(calls);
    expect(await ledger().committed(orgId, month())).toBe(0);
    // The credential itself is good: its plan's model goes through.
    const claude = await llm(
      null,
      { model: 'platform/claude', max_tokens: 10, messages: ask.messages },
      { path: '/llm/v1/messages', headers: { 'x-api-key': c.credential } },
    );
    expect(claude.status, claude.text).toBe(200);
  });

  it("cannot get another conversation's kept answer with its Idempotency-Key: the same key there is a call of its own", async () => {
    const headers = { 'idempotency-key': 'shared-key-1' };
    const mine = await llm(p.credential, ask, { headers });
    expect(mine.status).toBe(200);
    const q = await platformConversation('hostile-idem');
    const calls = upstream.requests.length;
    const theirs = await llm(q.credential, ask, { headers });
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.requestId).not.toBe(mine.requestId);
    expect(upstream.requests.length).toBe(calls + 1);
  });

  it('is refused at once for a suspended user or organization (their sandbox still RUNNING), and metered nothing', async () => {
    const q = p;
    expect((await llm(q.credential, ask)).status).toBe(200);
    const orgId = await stack.orgOf(q.key);
    const store = new DynamoAccountStore();
    // Stored directly, as the operator routes leave them but before they pause the sandboxes: only the
    // gateway's own check can refuse here (the sandbox is RUNNING in the credential's generation).
    const status = async (kind: 'user' | 'org', to: 'active' | 'suspended') => {
      if (kind === 'user') {
        const user = (await store.getUser('hostile-user'))!;
        expect(await store.replaceUser({ ...user, status: to })).toBe(true);
      } else {
        const org = (await store.getOrg(orgId))!;
        expect(await store.replaceOrg({ ...org, status: to })).toBe(true);
      }
    };
    const calls = upstream.requests.length;
    const before = await ledger().committed(orgId, month());
    for (const [kind, why] of [
      ['user', /account is suspended/],
      ['org', /organization is suspended/],
    ] as const) {
      await status(kind, 'suspended');
      const refused = await llm(q.credential, { ...ask, stream: true });
      expect(refused.status, kind).toBe(401);
      expect(refused.body.error).toEqual(
        expect.objectContaining({ type: 'authentication_error', message: expect.stringMatching(why) }),
      );
      expect(await ledger().get(refused.requestId)).toBeUndefined();
      await status(kind, 'active');
    }
    expect(upstream.requests.length).toBe(calls);
    expect(await ledger().committed(orgId, month())).toBe(before);
    expect((await stack.call('GET', `/api/v1/sandboxes?id=${q.sandboxId}`, { key: q.key })).body[0].status).toBe(
      'RUNNING',
    );
    // Reactivated: the same credential works again (nothing else revoked it).
    expect((await llm(q.credential, ask)).status).toBe(200);
  });
  it('gets 403 model_not_in_plan for a model its plan forbids, and 401 once a plan change, a revoke or a pause revokes the credential', async () => {
    const premium = await llm(p.credential, { ...ask, model: 'platform/premium' });
    expect(premium.status).toBe(403);
    expect(premium.body.error).toEqual(
      expect.objectContaining({ type: 'permission_error', code: 'model_not_in_plan' }),
    );
    const orgId = await stack.orgOf(p.key);
    await setPlan(orgId, 'claude_only');
    expect((await llm(p.credential, ask)).status).toBe(401);
    await setPlan(orgId, 'test');
    expect((await llm(p.credential, ask)).status).toBe(200);
    await stack.call('POST', `/api/v1/app-conversations/${p.conversationId}/session-api-key/revoke`, { key: p.key });
    expect((await llm(p.credential, ask)).status).toBe(401);

    const q = await platformConversation('hostile-pause');
    expect((await llm(q.credential, ask)).status).toBe(200);
    expect((await stack.call('POST', `/api/v1/sandboxes/${q.sandboxId}/pause`, { key: q.key })).status).toBe(200);
    expect((await llm(q.credential, ask)).status).toBe(401);
  });
});
