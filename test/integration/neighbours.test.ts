import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { request } from 'node:http';
import { connect } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { fillPath } from '#shared/protocol.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { REPLAYS_PER_USER_PER_MINUTE } from '#shared/stream/replay-rate.ts';
import { CLOSE_TOO_MANY } from '#shared/stream/socket-caps.ts';
import { REFUSAL_HOLD_MS } from '#infra/local/refusal-hold.ts';
import {
  allEvents,
  conversation,
  startConversation,
  storedConversation,
  storedSandbox,
} from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';
import { eventsUrl, openStream, type StreamClient } from '#test/helpers/stream-client.ts';

// One tenant cannot slow another: the plan's caps and rates on the local stack over real HTTP and
// WebSockets, as a hostile user and a hostile agent would push them. Small caps, from a plans file,
// on a plan each tenant's organization is put on: the default plan's (larger) caps would fail every
// count below, so these tests also prove each path reads the organization's plan, not the default.
const PLAN = {
  max_stream_sockets_per_user: 4,
  max_stream_sockets_per_conversation: 2,
  events_per_sandbox_per_second: 20,
  max_events_per_conversation: 300,
};
/** Plan `bytes`: stored event bytes per organization (a batch of 10 flood events is about 2.2 KB). */
const BYTES_CAP = 5_000;
let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
const clients: StreamClient[] = [];

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'neighbours-'));
  const plansFile = join(dir, 'plans.json');
  writeFileSync(
    plansFile,
    JSON.stringify({
      default_plan: 'free',
      plans: {
        free: {},
        small: PLAN,
        chatty: { requests_per_user_per_minute: 30 },
        bytes: { events_per_sandbox_per_second: 1000, max_event_bytes_per_org: BYTES_CAP },
      },
    }),
  );
  // The default spec, and `hostile`: a program of its own in place of the sandbox program (HOSTILE_PROGRAM).
  const specsFile = join(dir, 'specs.json');
  const defaults = JSON.parse(readFileSync('config/sandbox-specs.json', 'utf8')) as object[];
  writeFileSync(
    specsFile,
    JSON.stringify([
      ...defaults,
      {
        id: 'hostile',
        command: ['node', '-e', HOSTILE_PROGRAM],
        created_at: '2025-11-01T00:00:00Z',
        initial_env: {},
        working_dir: '{data_dir}/sandboxes/{sandbox_id}/workspace',
      },
    ]),
  );
  // No settings here: the one test that runs the agent saves them itself.
  agent = await startAgentStack({ stack: { plansFile, specsFile, sweepIntervalMs: 3_600_000 }, settings: null });
  ({ stack, llm } = agent);
}, 60_000);
afterAll(async () => {
  for (const c of clients) c.ws.terminate();
  await agent?.stop();
});

/** The conversation the hostile program floods (ids are unique per user: its user has this one only). */
const HOSTILE_CONVERSATION = 'a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0';
/**
 * What runs in a sandbox whose agent went hostile and holds its sandbox's key (a real agent can read it
 * from its program's memory: same uid): it checks in with the enrollment token as the program would,
 * then posts batches of 10 events as fast as the server answers for 3 s, never waiting out a 429, and
 * writes what it was told into its workspace (`flood.json`).
 */
const HOSTILE_PROGRAM = `
const base = process.env.BRIDGE_URL.replace(/\\/+$/, '');
const id = process.env.SANDBOX_ID;
const post = (path, key, body) => fetch(base + path, { method: 'POST', headers: { 'x-session-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
(async () => {
  const checkIn = await (await post('/api/v1/sandboxes/' + id + '/bridge/check-in', process.env.ENROLLMENT_TOKEN, { version: 'hostile' })).json();
  const key = checkIn.session_api_key;
  const counts = {};
  let next = 1;
  const until = Date.now() + 3000;
  while (Date.now() < until) {
    const events = Array.from({ length: 10 }, (_, i) => ({ kind: 'MessageEvent', id: 'h-' + (next + i), timestamp: new Date().toISOString(), source: 'agent', text: 'x'.repeat(100) }));
    const res = await post('/api/v1/webhooks/' + id + '/events/${HOSTILE_CONVERSATION}?first_seq=' + next, key, events);
    counts[res.status] = (counts[res.status] ?? 0) + 1;
    await res.arrayBuffer();
    if (res.status === 200) next += 10;
  }
  require('node:fs').writeFileSync('flood.json', JSON.stringify({ counts, next }));
  setInterval(() => {}, 60000);
})();
`;

/** Every event item stored for a conversation, committed or not (a Query that counts, on the events table). */
async function storedEvents(userId: string, conversationId: string): Promise<number> {
  const out = await documentClient().send(
    new QueryCommand({
      TableName: tableName('events'),
      KeyConditionExpression: 'conversationKey = :c AND seq > :zero',
      ExpressionAttributeValues: { ':c': `${userId}#${conversationId}`, ':zero': 0 },
      Select: 'COUNT',
      ConsistentRead: true,
    }),
  );
  return out.Count ?? 0;
}

/** A user with a key, whose organization is on the small plan (as an operator's plan change leaves it). */
async function tenant(userId: string): Promise<string> {
  const key = await stack.newUser(userId);
  await stack.putOnPlan(userId, 'small', key);
  return key;
}

/** A conversation record of `userId`, placed on `sandboxId` (none: not placed). */
const conversationOf = (userId: string, sandboxId: string | null = null) =>
  storedConversation(userId, { sandbox_id: sandboxId, execution_status: 'running' });

/** A RUNNING sandbox record of `userId` on `plan` (as a start writes it) with a key only the test (the "agent inside") holds. */
const sandboxOf = (userId: string, plan = 'small', orgId?: string) =>
  storedSandbox(userId, { plan, ...(orgId ? { orgId } : {}) });

const open = (cid: string, key: string, query: Record<string, string> = {}) => {
  const c = openStream(eventsUrl(stack.url, cid, query), { headers: { 'x-session-api-key': key } });
  clients.push(c);
  return c;
};
/** Resolves 'open' once the socket is open and stays open a moment, else its close code. */
const outcome = async (c: StreamClient): Promise<'open' | number> => {
  const closed = c.closed.then((x) => x.code);
  await Promise.race([c.opened, closed]);
  return Promise.race([closed, new Promise<'open'>((r) => setTimeout(() => r('open'), 300))]);
};

describe('stream socket caps (a user opening sockets without end)', () => {
  it('holds the per-conversation and per-user caps (close 4429 with the reason), and frees a slot when a socket closes', async () => {
    const key = await tenant('socket-hog');
    const [a, b, c] = [
      await conversationOf('socket-hog'),
      await conversationOf('socket-hog'),
      await conversationOf('socket-hog'),
    ];
    const onA = [open(a, key), open(a, key)];
    for (const s of onA) expect(await outcome(s)).toBe('open');
    const third = open(a, key);
    expect(await outcome(third)).toBe(CLOSE_TOO_MANY);
    expect((await third.closed).reason).toBe('Too many open streams: at most 2 per conversation');
    for (const s of [open(b, key), open(b, key)]) expect(await outcome(s)).toBe('open');
    const fifth = open(c, key);
    expect(await outcome(fifth)).toBe(CLOSE_TOO_MANY);
    expect((await fifth.closed).reason).toBe('Too many open streams: at most 4 per user');
    // Another user is not affected by this one's sockets.
    const other = await tenant('socket-neighbour');
    expect(await outcome(open(await conversationOf('socket-neighbour'), other))).toBe('open');
    await onA[0]!.close();
    await waitFor('a freed slot', async () => outcome(open(c, key)), { until: (o) => o === 'open', timeoutMs: 5_000 });
  });

  it(`refuses a user's replays past ${REPLAYS_PER_USER_PER_MINUTE} a minute (4429), not their live opens, nor another user's replays`, async () => {
    const key = await tenant('replayer');
    const cid = await conversationOf('replayer');
    // At once: every open that asks for history takes a replay, whatever the socket caps then say.
    const burst = Array.from({ length: REPLAYS_PER_USER_PER_MINUTE }, (_, i) =>
      open(cid, key, i % 2 ? { resend_all: 'true' } : { after_seq: '0' }),
    );
    expect((await Promise.all(burst.map(outcome))).filter((o) => o === 'open').length).toBeGreaterThan(0);
    for (const s of burst) await s.close();
    // The bucket refills at half a replay a second: within a few more, one is refused.
    let refused: { code: number; reason: string } | undefined;
    for (let i = 0; i < 5 && !refused; i++) {
      const s = open(cid, key, { resend_mode: 'all' });
      const o = await outcome(s);
      if (o === CLOSE_TOO_MANY) refused = await s.closed;
      else await s.close();
    }
    expect(refused?.reason).toMatch(/^Too many replays/);
    expect(await outcome(open(cid, key))).toBe('open');
    const other = await tenant('replay-neighbour');
    expect(await outcome(open(await conversationOf('replay-neighbour'), other, { resend_all: 'true' }))).toBe('open');
  });

  it('holds under 30 racing opens: exactly the cap gets in', async () => {
    const key = await tenant('socket-racer');
    const cid = await conversationOf('socket-racer');
    const racing = Array.from({ length: 30 }, () => open(cid, key));
    const outcomes = await Promise.all(racing.map(outcome));
    expect(outcomes.filter((o) => o === 'open')).toHaveLength(2);
    expect(outcomes.filter((o) => o === CLOSE_TOO_MANY)).toHaveLength(28);
  });

  it('a replay to a client that stops reading reads the store only as far as the socket takes, and goes on when it reads again', async () => {
    const key = await tenant('slow-reader');
    const cid = await conversationOf('slow-reader');
    // 60 MB of history: 2,000 events of 30 KB (under the 32 KB past which the stream sends a reference).
    const text = 'y'.repeat(30_000);
    const store = new DynamoEventStore();
    for (let from = 1; from <= 2_000; from += 100)
      await store.append(
        { userId: 'slow-reader', conversationId: cid },
        from,
        Array.from({ length: 100 }, (_, i) => ({
          kind: 'MessageEvent',
          id: `slow-${from + i}`,
          timestamp: new Date().toISOString(),
          source: 'agent' as const,
          text,
        })),
      );
    // The server's reads of this conversation (Queries of at most 1 MB each), counted as they are sent.
    let reads = 0;
    documentClient().middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
        if (Object.values(input.ExpressionAttributeValues ?? {}).includes(`slow-reader#${cid}`)) reads++;
        return next(args);
      },
      { step: 'initialize', name: 'countSlowReaderReads' },
    );
    // A raw client (a WebSocket client library would read on its own): the handshake, then it reads nothing.
    const { port } = new URL(stack.url);
    const socket = connect(Number(port), '127.0.0.1');
    try {
      socket.write(
        `GET /sockets/events/${cid}?resend_all=true HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nx-session-api-key: ${key}\r\n\r\n`,
      );
      const [first] = (await once(socket, 'data')) as [Buffer];
      socket.pause();
      expect(first.toString('latin1')).toMatch(/^HTTP\/1\.1 101/);
      await new Promise((r) => setTimeout(r, 3_000));
      const whilePaused = reads;
      await new Promise((r) => setTimeout(r, 1_000));
      // Nothing more read while nothing is taken, and what was read is what the buffers took (a few
      // MB), not the 60 MB history (about 60 reads).
      expect(reads).toBe(whilePaused);
      expect(reads).toBeLessThanOrEqual(20);
      // Reading again, the client gets the rest: about 60 MB of frames.
      let received = first.length;
      socket.on('data', (chunk: Buffer) => (received += chunk.length));
      socket.resume();
      await waitFor('the whole history', async () => (received >= 2_000 * 30_000 ? true : undefined), {
        timeoutMs: 60_000,
      });
      expect(reads).toBeGreaterThan(40);
    } finally {
      socket.destroy();
      documentClient().middlewareStack.remove('countSlowReaderReads');
    }
  }, 120_000);
});

describe('requests per user per minute (a client calling without pause)', () => {
  it("refuses past the plan's rate with 429 and Retry-After, and another user's requests go on", async () => {
    const key = await stack.newUser('chatty');
    await stack.putOnPlan('chatty', 'chatty', key);
    const other = await tenant('quiet');
    const answers = await Promise.all(Array.from({ length: 45 }, () => stack.call('GET', '/api/v1/users/me', { key })));
    const refused = answers.filter((a) => a.status === 429);
    // 30 a minute, one minute held: the set-up's request and about 29 of these pass (a few more refill while they run).
    expect(answers.filter((a) => a.status === 200).length).toBeLessThanOrEqual(31);
    expect(refused.length).toBeGreaterThanOrEqual(14);
    for (const a of answers) expect([200, 429]).toContain(a.status);
    expect(refused[0]!.body.detail).toBe('Too many requests: your plan allows 30 per minute');
    expect(Number(refused[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await stack.call('GET', '/api/v1/users/me', { key: other })).status).toBe(200);
  });
});

/** A raw WebSocket upgrade of a stream: 101 (the socket is dropped at once) or the HTTP answer that refused it. */
function upgrade(cid: string, key: string): Promise<{ status: number; retryAfter?: string; body?: any }> {
  return new Promise((resolve, reject) => {
    const req = request(`${stack.url}/sockets/events/${cid}`, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        'x-session-api-key': key,
      },
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ status: 101 });
    });
    req.on('response', async (res) => {
      let text = '';
      for await (const chunk of res) text += chunk;
      resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], body: JSON.parse(text) });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('stream opens count as requests (a client reopening sockets in a loop)', () => {
  it("past the plan's rate the upgrade is answered 429 with Retry-After before any handshake, after a hold; another user's opens go on", async () => {
    const key = await stack.newUser('chatty-streams');
    await stack.putOnPlan('chatty-streams', 'chatty', key);
    const cid = await conversationOf('chatty-streams');
    const sent = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 45 }, () => upgrade(cid, key).then((a) => ({ ...a, ms: performance.now() - sent }))),
    );
    // 30 a minute: the set-up's request and about 29 opens pass (upgraded; the socket caps close most).
    expect(answers.filter((a) => a.status === 101).length).toBeLessThanOrEqual(31);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(14);
    for (const a of answers) expect([101, 429]).toContain(a.status);
    expect(limited[0]!.body.detail).toMatch(/^Too many requests/);
    expect(Number(limited[0]!.retryAfter)).toBeGreaterThanOrEqual(1);
    // Each refusal held a second (REFUSAL_HOLD_MS) before its answer: a loop that reopens on the answer is slowed to it.
    for (const a of limited) expect(a.ms).toBeGreaterThanOrEqual(REFUSAL_HOLD_MS - 50);
    const other = await tenant('chatty-neighbour');
    expect((await upgrade(await conversationOf('chatty-neighbour'), other)).status).toBe(101);
  });
});

describe('events a sandbox posts (a hostile agent holding its sandbox key)', () => {
  const post = (s: { id: string; key: string }, cid: string, firstSeq: number, n: number) =>
    stack.call('POST', `${fillPath('events', { sandbox_id: s.id, conversation_id: cid })}?first_seq=${firstSeq}`, {
      key: s.key,
      body: Array.from({ length: n }, (_, i) => ({
        kind: 'MessageEvent',
        id: `flood-${firstSeq + i}`,
        timestamp: new Date().toISOString(),
        source: 'agent',
        text: 'x'.repeat(100),
      })),
    });

  it('posting as fast as it can: 429 with Retry-After past the rate, and what is committed stays within the bucket', async () => {
    const sandbox = await sandboxOf('flooder');
    const cid = await conversationOf('flooder', sandbox.id);
    const started = Date.now();
    let next = 1;
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    while (Date.now() - started < 2_000) {
      const res = await post(sandbox, cid, next, 10);
      statuses.push(res.status);
      if (res.status === 200) next += 10;
      else retryAfter ??= res.headers.get('retry-after');
    }
    const seconds = (Date.now() - started) / 1000;
    const committed = await new DynamoEventStore().lastSeq({ userId: 'flooder', conversationId: cid });
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // One second of burst plus the rate over the time it posted.
    expect(committed).toBeLessThanOrEqual(PLAN.events_per_sandbox_per_second * (seconds + 1) + 10);
    expect(committed).toBeGreaterThanOrEqual(PLAN.events_per_sandbox_per_second);
  });

  it('racing posts of many batches at once cannot beat the bucket: a refused batch stores nothing', async () => {
    const sandbox = await sandboxOf('racer');
    const cid = await conversationOf('racer', sandbox.id);
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(sandbox, cid, i * 10 + 1, 10)));
    const seconds = (Date.now() - started) / 1000;
    const ok = answers.filter((a) => a.status === 200).length;
    for (const a of answers) expect([200, 429]).toContain(a.status);
    expect(ok).toBeLessThan(20);
    // A full bucket holds one second (20 events) and refills at the rate while the racers are served:
    // what was accepted (committed, or stored beyond a gap) and what is stored at all stay within it.
    const bound = PLAN.events_per_sandbox_per_second * (seconds + 1);
    expect(ok * 10).toBeLessThanOrEqual(bound);
    expect(await storedEvents('racer', cid)).toBe(ok * 10);
  });

  it("holds the organization's stored event bytes within one sweep: 402 with code, limit and used, the conversation stopped; other organizations go on", async () => {
    const key = await stack.newUser('byter');
    const orgId = await stack.orgOf(key);
    const sandbox = await sandboxOf('byter', 'bytes', orgId);
    const [a, b] = [await conversationOf('byter', sandbox.id), await conversationOf('byter', sandbox.id)];
    const other = await sandboxOf('bystander', 'bytes', `org_other_${randomUUID().slice(0, 8)}`);
    const otherCid = await conversationOf('bystander', other.id);
    // Under the cap until a sweep sums it: two conversations of one organization, 4 batches in all.
    for (const cid of [a, b])
      for (const first of [1, 11]) expect((await post(sandbox, cid, first, 10)).status).toBe(200);
    expect((await post(other, otherCid, 1, 10)).status).toBe(200);
    const swept = await stack.services.eventBytes.sweep();
    expect(swept.organizations).toBeGreaterThanOrEqual(2);
    // A second sweep finds nothing grown: each counter left the index when its growth was summed.
    expect(await stack.services.eventBytes.sweep()).toEqual({ conversations: 0, organizations: 0 });
    const refused = await post(sandbox, a, 21, 10);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'max_event_bytes_per_org', limit: BYTES_CAP });
    const used = (refused.body as { used: number }).used;
    // The sum is of what was stored: 4 batches of about 2.2 KB each, counted once.
    expect(used).toBeGreaterThan(4 * 2_000);
    expect(used).toBeLessThan(4 * 2_500);
    const stop = (await allEvents(stack, a, key)).find((e) => e.kind === 'ConversationErrorEvent');
    expect(stop).toMatchObject({ code: 'max_event_bytes_per_org' });
    expect((await conversation(stack, a, key))!.execution_status).toBe('error');
    // Nothing of the refused batch was stored; a second refusal adds no second stop event.
    expect(await storedEvents('byter', a)).toBe(21);
    expect((await post(sandbox, a, 22, 10)).status).toBe(402);
    expect(await storedEvents('byter', a)).toBe(21);
    // The organization's other conversation is refused too (its counter was summed); another organization is not.
    expect((await post(sandbox, b, 21, 10)).status).toBe(402);
    expect((await post(other, otherCid, 11, 10)).status).toBe(200);
  });

  it('at the cap of events per conversation: 402 with code, limit and used; the conversation stops with an event saying why', async () => {
    const sandbox = await sandboxOf('capped');
    const cid = await conversationOf('capped', sandbox.id);
    let next = 1;
    let last: Awaited<ReturnType<typeof post>> | undefined;
    for (let i = 0; i < 100 && next <= PLAN.max_events_per_conversation + 10; i++) {
      last = await post(sandbox, cid, next, 20);
      if (last.status === 200) next += 20;
      else if (last.status === 429)
        await new Promise((r) => setTimeout(r, Number(last!.headers.get('retry-after')) * 1000));
      else break;
    }
    expect(last!.status).toBe(402);
    expect(last!.body).toEqual({
      detail: expect.stringContaining('maximum of 300 events'),
      code: 'max_events_per_conversation',
      limit: 300,
      used: 300,
    });
    const store = new DynamoEventStore();
    const ref = { userId: 'capped', conversationId: cid };
    expect(await store.lastSeq(ref)).toBe(301);
    const page = await store.query(ref, { descending: true, limit: 1 });
    expect(page.items[0]).toMatchObject({ kind: 'ConversationErrorEvent', code: 'max_events_per_conversation' });
    expect((await new DynamoConversationStore().get('capped', cid))?.execution_status).toBe('error');
    // Posting again changes nothing and answers the same.
    expect((await post(sandbox, cid, 301, 5)).status).toBe(402);
    expect(await store.lastSeq(ref)).toBe(301);
  }, 60_000);

  it('a hostile program in a real sandbox, posting as fast as it is answered with its own key, is held to the bucket', async () => {
    const key = await stack.newUser('hostile-agent');
    await stack.putOnPlan('hostile-agent', 'small', key);
    const started = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=hostile', { key });
    expect(started.status).toBe(200);
    const sandboxId = started.body.id as string;
    await storedConversation('hostile-agent', {
      id: HOSTILE_CONVERSATION,
      sandbox_id: sandboxId,
      execution_status: 'running',
    });
    const report = join(stack.dataDir, 'sandboxes', sandboxId, 'workspace', 'flood.json');
    const began = Date.now();
    const { counts, next } = await waitFor(
      "the hostile program's report",
      async () =>
        existsSync(report)
          ? (JSON.parse(readFileSync(report, 'utf8')) as { counts: Record<string, number>; next: number })
          : undefined,
      { timeoutMs: 30_000 },
    );
    const seconds = (Date.now() - began) / 1000;
    // It posted more than the plan lets through, and was refused with 429 past the rate.
    expect(counts['429']).toBeGreaterThanOrEqual(1);
    const committed = await new DynamoEventStore().lastSeq({
      userId: 'hostile-agent',
      conversationId: HOSTILE_CONVERSATION,
    });
    expect(committed).toBe(next - 1);
    expect(committed).toBeGreaterThanOrEqual(PLAN.events_per_sandbox_per_second);
    // One second of burst plus the rate over the time it could post, and nothing stored beyond what was committed.
    expect(committed).toBeLessThanOrEqual(PLAN.events_per_sandbox_per_second * (seconds + 1) + 10);
    expect(await storedEvents('hostile-agent', HOSTILE_CONVERSATION)).toBe(committed);
    await stack.call('DELETE', `/api/v1/sandboxes/${sandboxId}`, { key });
  }, 60_000);

  it('an honest agent in a real sandbox loses no event: its program retries 429s and keeps the batch', async () => {
    // Many quick tool calls: far more events than one second of the bucket holds.
    const steps = Array.from({ length: 12 }, (_, i) => reply.bash(`echo step-${i}`));
    llm.enqueue(...steps, reply.finish('all steps done'));
    await stack.putOnPlan('dev', 'small');
    await stack.call('POST', '/api/settings', {
      body: { llm_model: 'm', llm_api_key: 'sk-n', llm_base_url: llm.baseUrl },
    });
    const task = await startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'go' }] } });
    const cid = task.app_conversation_id;
    await waitFor('finished', () => conversation(stack, cid), {
      until: (c) => c?.execution_status === 'finished',
      timeoutMs: 90_000,
    });
    const events = await waitFor('the last event', () => allEvents(stack, cid), {
      until: (es) => es.some((e) => JSON.stringify(e).includes('all steps done')),
      timeoutMs: 30_000,
    });
    expect(events.length).toBeGreaterThan(PLAN.events_per_sandbox_per_second);
    for (let i = 0; i < 12; i++) expect(JSON.stringify(events)).toContain(`step-${i}`);
  }, 120_000);
});
