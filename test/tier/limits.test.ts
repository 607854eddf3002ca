import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_PER_IP_PER_MINUTE, SIGN_IN_PER_IP_REFUSAL } from '#shared/auth/rate-limit.ts';
import { MAX_PENDING_SOCKETS_PER_IP } from '#shared/stream/socket-caps.ts';
import { REPLAYS_PER_USER_PER_MINUTE } from '#shared/stream/replay-rate.ts';
import { requestFrom } from '#test/helpers/request-from.ts';
import { ROOMY_PLANS } from '#test/helpers/stack.ts';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { OPERATOR_KEY } from '#test/tier/aws.ts';
import { createKey, settingsRoundTrip, until } from '#test/tier/flows.ts';
import { evaluate, rolePolicies } from '#test/tier/iam.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { connectStream, type StreamClient } from '#test/helpers/stream-client.ts';
import { ACCOUNT, ofType, REGION, type Template } from '#test/tier/template.ts';
import { expectRetryAfterInWindow, limiterMinute } from '#test/helpers/limiter-window.ts';

/*
 * The noisy-neighbour limits as deployed (issue 23): every function's plans made small (below), so the
 * caps and rates are reached in seconds through the synthesized bundles with only the template's env
 * and IAM: the socket caps at `$connect` (counted in `streamConnections`, per user through `byUser`),
 * replays per user, sockets pending first-message auth per client address (CloudFront's viewer address),
 * the event rate of the ingest bundle (429 with Retry-After; racing batches refused store nothing), the
 * cap of events per conversation (the conversation stopped with an event saying why) and stored event
 * bytes per organization (the sweeper's Scan of index `grownBytes`, then ingest's 402), a user's requests
 * per minute (plan `chatty`: the authorizer bundle on HTTP, `$connect` on the stream), and `POST
 * /api/authenticate` per client address (the authorizer's counter in the keys table). The reserved
 * concurrency of ingest is a template property: test/infra/stack.test.ts.
 */
const LIMITS = {
  max_stream_sockets_per_user: 3,
  max_stream_sockets_per_conversation: 2,
  events_per_sandbox_per_second: 20,
  max_events_per_conversation: 80,
  max_event_bytes_per_org: 40_000,
};
/** Plan `chatty`'s requests per user per minute (one organization is put on it; the others stay on `limits`). */
const CHATTY_RATE = 10;

function smallPlans(t: Template): void {
  const roomy = JSON.parse(readFileSync(ROOMY_PLANS, 'utf8')).plans.roomy;
  const plans = JSON.stringify({
    default_plan: 'limits',
    plans: { limits: { ...roomy, ...LIMITS }, chatty: { ...roomy, requests_per_user_per_minute: CHATTY_RATE } },
  });
  let changed = 0;
  for (const [, r] of ofType(t, 'AWS::Lambda::Function')) {
    const vars = r.Properties?.Environment?.Variables;
    if (vars && 'PLANS' in vars) {
      vars.PLANS = plans;
      changed++;
    }
  }
  expect(changed).toBeGreaterThan(0);
}

interface Conversation {
  user: string;
  id: string;
  sandboxId: string;
  scoped: string;
  sandboxKey: string;
  /** Committed events (the agent's, then the test's). */
  stored: number;
}

let tier: TierStack;
let llm: ScriptedLlm;
let db: DynamoDBDocumentClient;
const open: StreamClient[] = [];

/** A V1 conversation through the API (on `sandboxId` when given, else a new sandbox), its agent run finished. */
async function conversationOf(user: string, key: string, sandboxId?: string): Promise<Conversation> {
  llm.enqueue(reply.finish('done'));
  const body = {
    initial_message: { role: 'user', content: [{ type: 'text', text: 'hello limits' }], run: true },
    ...(sandboxId ? { sandbox_id: sandboxId } : {}),
  };
  const task = await tier.call('POST', '/api/v1/app-conversations', { key, body });
  expect(task.status, task.text).toBe(200);
  const ready = await until(
    tier,
    'start task READY',
    async () => (await tier.call('GET', `/api/v1/app-conversations/start-tasks?ids=${task.body.id}`, { key })).body[0],
    (t) => t?.status === 'READY' || t?.status === 'ERROR',
    90_000,
  );
  expect(ready.status, JSON.stringify(ready)).toBe('READY');
  const id = ready.app_conversation_id as string;
  const c = await until(
    tier,
    'conversation finished',
    async () => (await tier.call('GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0],
    (x) => ['finished', 'error'].includes(x?.execution_status),
    90_000,
  );
  expect(c.execution_status).toBe('finished');
  const stored = (await tier.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key })).body as number;
  return {
    user,
    id,
    sandboxId: c.sandbox_id,
    scoped: c.session_api_key,
    sandboxKey: (await tier.sandboxKey(c.sandbox_id))!,
    stored,
  };
}

/** `n` events numbered from `first`, each with `pad` bytes of text, as the agent would post them. */
const batch = (first: number, n: number, pad = 100) =>
  Array.from({ length: n }, (_, i) => ({
    kind: 'MessageEvent',
    id: `limits-${first + i}-${Math.random().toString(36).slice(2, 8)}`,
    timestamp: new Date().toISOString(),
    source: 'agent',
    llm_message: { role: 'assistant', content: [{ type: 'text', text: 'x'.repeat(pad) }] },
  }));

/** Posts through the real ingest bundle with the sandbox's own key (the hostile agent holds it). */
const post = (c: Conversation, first: number, events: unknown[]) =>
  tier.call('POST', `/api/v1/webhooks/${c.sandboxId}/events/${c.id}?first_seq=${first}`, {
    key: c.sandboxKey,
    body: events,
  });

/** Every event item stored for a conversation, committed or not (the operator's Query of the events table). */
async function storedItems(c: Conversation): Promise<number> {
  const out = await db.send(
    new QueryCommand({
      TableName: tier.outputs.EventsTableName,
      KeyConditionExpression: 'conversationKey = :c AND seq > :zero',
      ExpressionAttributeValues: { ':c': `${c.user}#${c.id}`, ':zero': 0 },
      Select: 'COUNT',
      ConsistentRead: true,
    }),
  );
  return out.Count ?? 0;
}

const streamUrl = (c: Conversation, query: string) =>
  `${tier.front.url.replace(/^http/, 'ws')}/sockets/events/${c.id}?${query}`;

async function socket(url: string, options: { localAddress?: string } = {}): Promise<StreamClient> {
  const s = await connectStream(url, options);
  if (s.refused === undefined) open.push(s);
  return s;
}

/** Closes sockets and waits until `$disconnect` ran for each (the table no longer counts them). */
async function closeAll(sockets: StreamClient[]): Promise<void> {
  const disconnects = () => tier.sockets.records.filter((r) => r.routeKey === '$disconnect').length;
  const before = disconnects();
  const live = sockets.filter((s) => s.ws.readyState === s.ws.OPEN);
  await Promise.all(live.map((s) => s.close()));
  await until(
    tier,
    '$disconnect ran',
    async () => disconnects(),
    (n) => n >= before + live.length,
    20_000,
  );
}

let u1: Conversation;
let u1b: Conversation;
let u2: Conversation;
/** The users' API keys (conversation listings take a user's key, not a conversation's). */
let k1: string;
let k2: string;

beforeAll(async () => {
  [tier, llm] = await Promise.all([startTier({ mutate: smallPlans }), startScriptedLlm()]);
  db = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: REGION,
      endpoint: tier.aws.url,
      credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'operator-secret' },
    }),
  );
  [k1, k2] = await Promise.all([createKey(tier, 'limits-one'), createKey(tier, 'limits-two')]);
  await Promise.all([settingsRoundTrip(tier, k1, llm.baseUrl), settingsRoundTrip(tier, k2, llm.baseUrl)]);
  [u1, u2] = await Promise.all([conversationOf('limits-one', k1), conversationOf('limits-two', k2)]);
  // A second conversation of the first user, on the same sandbox: the per-user cap spans conversations.
  u1b = await conversationOf('limits-one', k1, u1.sandboxId);
}, 240_000);
afterAll(async () => {
  for (const s of open) s.ws.terminate();
  await tier?.stop();
  await llm?.close();
});

describe('stream sockets at $connect', () => {
  it("refuses past the plan's sockets per user (counted across conversations through byUser) and per conversation, with 429 and the reason", async () => {
    const a = [await socket(streamUrl(u1, `session_api_key=${u1.scoped}`))];
    a.push(await socket(streamUrl(u1, `session_api_key=${u1.scoped}`)));
    const b = [await socket(streamUrl(u1b, `session_api_key=${u1b.scoped}`))];
    for (const s of [...a, ...b]) expect(s.refused, s.refusedBody).toBeUndefined();
    // Three open for the user, one on this conversation: the user's cap refuses it.
    const overUser = await socket(streamUrl(u1b, `session_api_key=${u1b.scoped}`));
    expect([overUser.refused, overUser.refusedBody]).toEqual([429, 'Too many open streams: at most 3 per user']);
    // Another user is not affected.
    const other = await socket(streamUrl(u2, `session_api_key=${u2.scoped}`));
    expect(other.refused).toBeUndefined();
    await closeAll([b[0]!, other]);
    // Two for the user now: the conversation's cap (2) is what refuses a third on the first conversation.
    const overConversation = await socket(streamUrl(u1, `session_api_key=${u1.scoped}`));
    expect([overConversation.refused, overConversation.refusedBody]).toEqual([
      429,
      'Too many open streams: at most 2 per conversation',
    ]);
    await closeAll(a);
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

  it(`refuses a user's opens with history past ${REPLAYS_PER_USER_PER_MINUTE} a minute (per $connect container), not an open without history`, async () => {
    // One after the other: one warm `$connect` process counts them all. Each is counted before the caps,
    // so the ones the per-conversation cap refuses count too.
    const held: StreamClient[] = [];
    let refused: StreamClient | undefined;
    for (let i = 0; i < REPLAYS_PER_USER_PER_MINUTE + 10 && !refused; i++) {
      const s = await socket(streamUrl(u1, `resend_all=true&session_api_key=${u1.scoped}`));
      if (s.refused === undefined) held.push(s);
      else if (s.refusedBody?.startsWith('Too many replays')) refused = s;
      else expect(s.refusedBody).toBe('Too many open streams: at most 2 per conversation');
    }
    expect(refused?.refused).toBe(429);
    expect(held.length).toBe(2);
    await closeAll(held);
    const live = await socket(streamUrl(u1, `session_api_key=${u1.scoped}`));
    expect(live.refused).toBeUndefined();
    await closeAll([live]);
  }, 60_000);

  it(`holds sockets pending first-message auth to ${MAX_PENDING_SOCKETS_PER_IP} per client address (CloudFront's viewer address), under racing too`, async () => {
    const pending = (from: string) => socket(streamUrl(u1, ''), { localAddress: from });
    // One after the other (one warm `$connect` process): each is counted once the one before is recorded.
    const first: StreamClient[] = [];
    for (let i = 0; i < MAX_PENDING_SOCKETS_PER_IP; i++) first.push(await pending('127.0.0.2'));
    for (const s of first) expect(s.refused).toBeUndefined();
    const over = await pending('127.0.0.2');
    expect([over.refused, over.refusedBody]).toEqual([
      429,
      `Too many unauthenticated streams from one address (${MAX_PENDING_SOCKETS_PER_IP})`,
    ]);
    // Another address is not held by this one's sockets.
    expect((await pending('127.0.0.3')).refused).toBeUndefined();
    // One authenticates (its slot goes back) and one closes (`$disconnect` gives its slot back): two more fit.
    first[0]!.ws.send(JSON.stringify({ type: 'auth', session_api_key: u1.scoped }));
    await until(
      tier,
      'the auth frame taken',
      async () => tier.sockets.records.filter((r) => r.routeKey === '$default').length,
      (n) => n >= 1,
    );
    await closeAll([first[1]!]);
    const again = [await pending('127.0.0.2'), await pending('127.0.0.2')];
    expect(again.map((s) => s.refused)).toEqual([undefined, undefined]);
    expect((await pending('127.0.0.2')).refused).toBe(429);
    // 12 racing from a fresh address: never more than the limit get in (recorded first, counted after: racers
    // may all be refused, never all admitted), and what the refused ones recorded is gone.
    const racing = await Promise.all(Array.from({ length: 12 }, () => pending('127.0.0.4')));
    const opened = racing.filter((s) => s.refused === undefined).length;
    expect(opened).toBeLessThanOrEqual(MAX_PENDING_SOCKETS_PER_IP);
    expect(racing.filter((s) => s.refused === 429).length).toBe(12 - opened);
    expect((await pending('127.0.0.4')).refused).toBe(opened < MAX_PENDING_SOCKETS_PER_IP ? undefined : 429);
    await tier.aws.settle();
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);
});

describe('events a sandbox posts (the hostile agent holds its sandbox key)', () => {
  it('racing batches cannot beat the rate: 429 with Retry-After from the ingest bundle, and a refused batch stores nothing', async () => {
    const before = await storedItems(u1b);
    const base = u1b.stored;
    // Three ingest processes warmed first (a post of a committed number stores and charges nothing), so the
    // racers meet at the bucket rather than at cold starts.
    await Promise.all([1, 2, 3].map(() => post(u1b, 1, batch(1, 1))));
    expect(await storedItems(u1b)).toBe(before);
    // Three batches of 20 at once (within the conversation's cap of 80), against a bucket of 20 refilled at 20 a second.
    const started = Date.now();
    const answers = await Promise.all([0, 1, 2].map((i) => post(u1b, base + 1 + i * 20, batch(0, 20))));
    const seconds = (Date.now() - started) / 1000;
    for (const a of answers) expect([200, 429], a.text).toContain(a.status);
    const ok = answers.filter((a) => a.status === 200).length;
    expect(ok).toBeGreaterThan(0);
    expect(ok * 20).toBeLessThanOrEqual(LIMITS.events_per_sandbox_per_second * (seconds + 1));
    expect(ok, `all three passed in ${seconds} s`).toBeLessThan(3);
    // Refused by the ingest bundle itself (our 429, with when to retry; API Gateway's own throttle would carry none).
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.body.detail).toBe('Too many events: at most 20 per second per conversation');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // What was accepted is stored (committed, or beyond a gap), and of the refused batches nothing.
    expect(await storedItems(u1b)).toBe(before + ok * 20);
  }, 60_000);

  it('at the cap of events per conversation: 402 with code, limit and used, and the conversation stopped with an event saying why', async () => {
    let last: Awaited<ReturnType<typeof post>> | undefined;
    for (let i = 0; i < 60 && u1.stored <= LIMITS.max_events_per_conversation; i++) {
      last = await post(u1, u1.stored + 1, batch(u1.stored + 1, 10));
      if (last.status === 200) u1.stored += 10;
      else if (last.status === 429)
        await new Promise((r) => setTimeout(r, Number(last!.headers.get('retry-after')) * 1000));
      else break;
    }
    expect(last!.status, last!.text).toBe(402);
    expect(last!.body).toMatchObject({
      code: 'max_events_per_conversation',
      limit: LIMITS.max_events_per_conversation,
      used: LIMITS.max_events_per_conversation,
    });
    const events = (await tier.call('GET', `/api/v1/events/search?conversation_id__eq=${u1.id}&limit=100`, { key: k1 }))
      .body.items as any[];
    // The cap's events, then the one that says why: nothing past the cap was stored.
    expect(events).toHaveLength(LIMITS.max_events_per_conversation + 1);
    expect(events.at(-1)).toMatchObject({ kind: 'ConversationErrorEvent', code: 'max_events_per_conversation' });
    const [c] = (await tier.call('GET', `/api/v1/app-conversations?ids=${u1.id}`, { key: k1 })).body;
    expect(c.execution_status).toBe('error');
    // Nothing more is stored, and the answer stays the same.
    expect(await storedItems(u1)).toBe(LIMITS.max_events_per_conversation + 1);
    expect((await post(u1, u1.stored + 1, batch(0, 5))).status).toBe(402);
    expect(await storedItems(u1)).toBe(LIMITS.max_events_per_conversation + 1);
    expect(tier.aws.denials).toEqual([]);
  }, 90_000);

  it("stored event bytes per organization: the sweeper's Scan of index grownBytes sums them, then ingest answers 402 and stops the conversation", async () => {
    // Two batches of 8 events of 3 KB (within the bucket's burst): over the organization's 40 KB once a sweep sums them.
    for (const first of [u2.stored + 1, u2.stored + 9])
      expect((await post(u2, first, batch(first, 8, 3_000))).status).toBe(200);
    u2.stored += 16;
    const run = await tier.bus.runSchedule('SweeperSchedule');
    expect(run.result.ok, JSON.stringify(run.result.error)).toBe(true);
    const scans = tier.aws.calls.filter((c) => c.operation === 'dynamodb:Scan');
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.every((c) => c.allowed && c.principal === tier.lambda.byName('sweeper').roleArn)).toBe(true);
    const items = await storedItems(u2);
    const refused = await post(u2, u2.stored + 1, batch(u2.stored + 1, 5));
    expect(refused.status, refused.text).toBe(402);
    expect(refused.body).toMatchObject({ code: 'max_event_bytes_per_org', limit: LIMITS.max_event_bytes_per_org });
    expect(refused.body.used).toBeGreaterThan(LIMITS.max_event_bytes_per_org);
    // Of the refused batch nothing is stored: only the one event that says why the conversation stopped.
    const search = await tier.call('GET', `/api/v1/events/search?conversation_id__eq=${u2.id}&limit=100`, { key: k2 });
    expect(search.body.items.at(-1)).toMatchObject({ kind: 'ConversationErrorEvent', code: 'max_event_bytes_per_org' });
    expect(await storedItems(u2)).toBe(items + 1);
    expect((await post(u2, u2.stored + 2, batch(0, 5))).status).toBe(402);
    expect(await storedItems(u2)).toBe(items + 1);
    const [c] = (await tier.call('GET', `/api/v1/app-conversations?ids=${u2.id}`, { key: k2 })).body;
    expect(c.execution_status).toBe('error');
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

  it("the sweeper's role may Scan index grownBytes and nothing else of the events table", () => {
    const { roleArn } = tier.lambda.byName('sweeper');
    const statements = rolePolicies(tier.resolved).get(roleArn)!;
    const table = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${tier.outputs.EventsTableName}`;
    expect(evaluate(statements, { action: 'dynamodb:Scan', resource: `${table}/index/grownBytes` }).allowed).toBe(true);
    for (const resource of [table, `${table}/index/byKind`])
      expect(evaluate(statements, { action: 'dynamodb:Scan', resource }).allowed, `${roleArn} Scan ${resource}`).toBe(
        false,
      );
  });
});

describe("a user's requests per minute (plan `chatty`), counted per container", () => {
  let chatty: string;
  beforeAll(async () => {
    // An organization put on the plan (as an operator's plan change leaves it) before its member's first
    // request: the authorizer holds an account it read for 30 s, so the member is made after (keys CLI --org).
    const owner = await createKey(tier, 'chatty-owner');
    const orgId = (await tier.call('GET', '/api/v1/users/me', { key: owner })).body.org_id as string;
    await db.send(
      new UpdateCommand({
        TableName: tier.outputs.OrgsTableName,
        Key: { orgId },
        UpdateExpression: 'SET #plan = :plan',
        ExpressionAttributeNames: { '#plan': 'plan' },
        ExpressionAttributeValues: { ':plan': 'chatty' },
      }),
    );
    chatty = await createKey(tier, 'chatty', orgId);
  }, 60_000);

  it(`an HTTP route past ${CHATTY_RATE} a minute: 429 with Retry-After from the authorizer bundle; another user goes on`, async () => {
    // One after the other: one warm authorizer process counts them all (a bucket per container on AWS).
    const passed: number[] = [];
    let refused: Awaited<ReturnType<TierStack['call']>> | undefined;
    for (let i = 0; i < CHATTY_RATE + 5 && !refused; i++) {
      const res = await tier.call('GET', '/api/v1/users/me', { key: chatty });
      if (res.status === 429) refused = res;
      else passed.push(res.status);
    }
    // A minute's worth, and perhaps one refilled while they ran.
    expect(passed.length).toBeGreaterThanOrEqual(CHATTY_RATE);
    expect(passed.length).toBeLessThanOrEqual(CHATTY_RATE + 1);
    expect(new Set(passed)).toEqual(new Set([200]));
    expect(refused?.body).toEqual({ detail: `Too many requests: your plan allows ${CHATTY_RATE} per minute` });
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await tier.call('GET', '/api/v1/users/me', { key: k2 })).status).toBe(200);
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

  it(`a stream open past ${CHATTY_RATE} a minute: 429 at $connect (taken before the conversation is read); another user's opens go on`, async () => {
    // No such conversation: an open within the rate reaches the conversation's read (404), one past it does not.
    const url = `${tier.front.url.replace(/^http/, 'ws')}/sockets/events/${randomUUID().replace(/-/g, '')}`;
    const openAs = (key: string) => connectStream(url, { headers: { 'x-session-api-key': key } });
    // One after the other: one warm `$connect` process counts them (its own count: the HTTP requests above are not in it).
    const notFound: (number | undefined)[] = [];
    let refused: StreamClient | undefined;
    for (let i = 0; i < CHATTY_RATE + 5 && !refused; i++) {
      const s = await openAs(chatty);
      if (s.refused === 429) refused = s;
      else notFound.push(s.refused);
    }
    expect(notFound.length).toBeGreaterThanOrEqual(CHATTY_RATE);
    expect(notFound.length).toBeLessThanOrEqual(CHATTY_RATE + 1);
    expect(new Set(notFound)).toEqual(new Set([404]));
    expect(refused?.refusedBody).toBe(
      "Too many requests: streams opened count against your plan's requests per minute",
    );
    expect((await openAs(k2)).refused).toBe(404);
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);
});

describe("POST /api/authenticate per client address (CloudFront's viewer address)", () => {
  it(`counts every attempt before any key is read, refused ones too: past ${SIGN_IN_PER_IP_PER_MINUTE} a minute 429 with Retry-After, even with a good key; another address goes on`, async () => {
    const wrong = `acs_0000000000000000_${'A'.repeat(43)}`;
    const attempt = (from: string, key: string) =>
      requestFrom(tier.front.url, from, 'POST', '/api/authenticate', { 'x-session-api-key': key });
    // Within one limiter window (fixed minutes): should the minute turn during a run, it is run again in the new one.
    for (let run = 0; run < 2; run++) {
      const began = limiterMinute();
      const since = Date.now();
      const from = `127.0.0.${30 + run}`;
      const refused: number[] = [];
      for (let i = 0; i < SIGN_IN_PER_IP_PER_MINUTE; i++) refused.push((await attempt(from, wrong)).status);
      const over = await attempt(from, k2);
      if (limiterMinute() !== began) continue;
      expect(refused).toEqual(Array(SIGN_IN_PER_IP_PER_MINUTE).fill(401));
      expect([over.status, over.body]).toEqual([429, { detail: SIGN_IN_PER_IP_REFUSAL }]);
      expectRetryAfterInWindow(over.headers['retry-after'], since);
      expect(over.headers['set-cookie']).toBeUndefined();
      expect((await attempt(`127.0.0.${40 + run}`, k2)).status).toBe(200);
      // The count is the route's: the address's other calls are not held.
      expect(
        (await requestFrom(tier.front.url, from, 'GET', '/api/v1/users/me', { 'x-session-api-key': k2 })).status,
      ).toBe(200);
      expect(tier.aws.denials).toEqual([]);
      return;
    }
    throw new Error('The minute turned during both runs');
  }, 60_000);
});
