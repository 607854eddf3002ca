import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '#shared/auth/api-keys.ts';
import { SEVERAL_SESSIONS_REFUSAL } from '#shared/auth/authorizer.ts';
import { REFUSALS } from '#shared/stream/access.ts';
import { DynamoStreamTicketStore } from '#shared/stream/dynamo-ticket-store.ts';
import { CLOSE, MAX_MESSAGE_BYTES } from '#shared/stream/messages.ts';
import { allEvents, conversation, startConversation, storedConversation } from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';
import { eventsUrl, openStream, type StreamClient } from '#test/helpers/stream-client.ts';

// The stream as clients use it, over real WebSockets on the local stack's port, fed by the real
// bridge route a sandbox posts to (with the sandbox's own key), on a conversation started by its agent.
const PING_MS = 400;
let agent: AgentStack;
let stack: TestStack;
let cid: string;
let sid: string;
let sandboxKey: string;
let scoped: string;
let userId: string;
const clients: StreamClient[] = [];

beforeAll(async () => {
  agent = await startAgentStack({
    stack: { streamPingMs: PING_MS },
    script: [reply.finish('ready'), reply.finish('heard you')],
  });
  stack = agent.stack;
  const task = await startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } });
  cid = task.app_conversation_id;
  sid = task.sandbox_id!;
  await waitFor('finished', () => conversation(stack, cid), {
    until: (c) => c?.execution_status === 'finished',
    timeoutMs: 60_000,
  });
  sandboxKey = (await stack.sandboxKey(sid))!;
  const view = (await conversation(stack, cid))!;
  scoped = view.session_api_key!;
  userId = view.created_by_user_id ?? 'dev';
}, 120_000);
afterAll(async () => {
  for (const c of clients) c.ws.terminate();
  // One stream still open when the server stops: closed as "going away", and the stop does not hang on it.
  const open = stack && stream({ session_api_key: scoped });
  await open?.opened;
  await agent?.stop();
  if (open) expect(await open.closed).toEqual({ code: CLOSE.goingAway, reason: 'Server shutting down' });
});

const stream = (query: Record<string, string> = {}, headers?: Record<string, string>, id = cid, autoPong = true) => {
  const c = openStream(eventsUrl(stack.url, id, query), { headers, autoPong });
  clients.push(c);
  return c;
};
let made = 0;
const ev = (text = `e${made + 1}`) => ({
  kind: 'MessageEvent',
  id: `stream-${++made}`,
  timestamp: new Date().toISOString(),
  source: 'agent',
  text,
});
const post = async (seq: number, events: unknown[]) => {
  const res = await stack.call('POST', `/api/v1/webhooks/${sid}/events/${cid}?first_seq=${seq}`, {
    key: sandboxKey,
    body: events,
  });
  expect(res.status, res.text).toBe(200);
};
const committed = async () =>
  (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${cid}`)).body as number;
const seqs = (c: StreamClient) => c.messages.map((m) => m.seq);
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

describe('the event stream', () => {
  // First: the agent numbers its own events, so it talks before the tests below post theirs.
  it('relays a user message the client sends on the socket (as the OpenHands UI does) to the agent, whose events then arrive', async () => {
    const c = stream({ resend_all: 'true', session_api_key: scoped });
    await c.until(await committed());
    const before = c.last();
    c.ws.send(JSON.stringify({ role: 'user', content: [{ type: 'text', text: 'over the socket' }], run: true }));
    await waitFor('the relayed message', async () => c.messages, {
      until: (ms) =>
        ms.some(
          (m) => m.kind === 'MessageEvent' && m.source === 'user' && JSON.stringify(m).includes('over the socket'),
        ),
      timeoutMs: 30_000,
    });
    // The agent's answer comes through the stream (the status was "finished" before, so it says nothing yet).
    await waitFor("the agent's answer", async () => c.messages, {
      until: (ms) => ms.some((m) => m.seq > before && JSON.stringify(m).includes('heard you')),
      timeoutMs: 30_000,
    });
    await waitFor('finished again', () => conversation(stack, cid), {
      until: (v) => v?.execution_status === 'finished',
      timeoutMs: 30_000,
    });
    // The agent is done: its events are all in, nothing new for a second (the tests below number theirs after them).
    let seen = -1;
    await waitFor(
      'the agent to settle',
      async () => {
        await new Promise((r) => setTimeout(r, 1000));
        const now = await committed();
        const settled = now === seen && now === c.last();
        seen = now;
        return settled;
      },
      { until: (settled) => settled, timeoutMs: 20_000 },
    );
    expect(seqs(c)).toEqual(range(1, c.last()));
    // Not a user message: closed with the reason, nothing relayed.
    c.ws.send(JSON.stringify({ role: 'assistant', content: [] }));
    expect(await c.closed).toMatchObject({ code: CLOSE.invalidMessage, reason: expect.stringContaining('role') });
    const garbage = stream({ session_api_key: scoped });
    await garbage.opened;
    garbage.ws.send('not json');
    expect((await garbage.closed).code).toBe(CLOSE.invalidMessage);
  }, 60_000);

  it('holds a client message to the depth limit HTTP applies to a body (checked before parsing), and to its size', async () => {
    const before = await committed();
    const deep = stream({ session_api_key: scoped });
    await deep.opened;
    // 65 levels inside a user message: HTTP answers 400 for this body; the socket closes, nothing relayed.
    const nested = `${'['.repeat(65)}${']'.repeat(65)}`;
    deep.ws.send(`{"role": "user", "content": [{"type": "text", "text": "x"}], "extra": ${nested}}`);
    expect(await deep.closed).toEqual({ code: CLOSE.invalidMessage, reason: 'A message may nest at most 64 levels' });
    // 100,000 levels: no stack overflow, the same answer, and the server still serves.
    const deeper = stream({ session_api_key: scoped });
    await deeper.opened;
    deeper.ws.send('['.repeat(100_000));
    expect((await deeper.closed).code).toBe(CLOSE.invalidMessage);
    const big = stream({ session_api_key: scoped });
    await big.opened;
    big.ws.send(JSON.stringify({ role: 'user', content: [{ type: 'text', text: 'x'.repeat(1024 * 1024) }] }));
    expect((await big.closed).code).toBe(1009);
    expect(await committed()).toBe(before);
    expect((await stack.call('GET', '/api/settings')).status).toBe(200);
  });

  it('with resend_all sends every stored event in order with its seq, then each new one as it is ingested', async () => {
    const stored = await allEvents(stack, cid);
    expect(stored.length).toBeGreaterThan(0);
    const c = stream({ resend_all: 'true', session_api_key: scoped });
    await c.until(stored.length);
    expect(c.messages.map(({ seq, ...e }) => e)).toEqual(stored);
    expect(seqs(c)).toEqual(range(1, stored.length));
    const next = [ev(), ev()];
    await post(stored.length + 1, next);
    await c.until(stored.length + 2);
    expect(c.messages.slice(-2)).toEqual(next.map((e, i) => ({ ...e, seq: stored.length + 1 + i })));
    await c.close();
  });

  it('without resend_all sends only what is committed after it opened', async () => {
    const end = await committed();
    const c = stream({ session_api_key: scoped });
    await c.opened;
    // The subscription is in place once the server has read the committed end; an event posted now must come.
    await new Promise((r) => setTimeout(r, 200));
    await post(end + 1, [ev()]);
    await c.until(end + 1);
    expect(seqs(c)).toEqual([end + 1]);
    await c.close();
  });

  it('delivers every event exactly once and in order across reconnects, with batches posted concurrently out of order and a gap filled last', async () => {
    const base = await committed();
    const steady = stream({ resend_all: 'true', session_api_key: scoped });
    await steady.until(base);
    // 12 batches of 4; the first is held back: nothing past the gap may go out until it lands.
    const batches = range(0, 11).map((b) => ({ first: base + 1 + b * 4, events: [ev(), ev(), ev(), ev()] }));
    const [gap, ...rest] = batches as [(typeof batches)[0], ...typeof batches];
    const shuffled = [...rest].sort(() => Math.random() - 0.5);

    // A client that reconnects with the last seq it saw, again and again while ingest goes on.
    const hopper: number[] = [];
    const hops = (async () => {
      let after = 0;
      for (let i = 0; i < 6; i++) {
        const c = stream({ after_seq: String(after), session_api_key: scoped });
        await c.opened;
        await new Promise((r) => setTimeout(r, 40 + Math.random() * 80));
        await c.close();
        hopper.push(...seqs(c));
        after = c.last() || after;
      }
      return after;
    })();
    await Promise.all(shuffled.map((b) => post(b.first, b.events)));
    await new Promise((r) => setTimeout(r, 300));
    expect(steady.last(), 'nothing past the gap').toBe(base);
    expect(await committed()).toBe(base);
    await post(gap.first, gap.events);
    const end = base + 48;
    await steady.until(end);
    const after = await hops;
    // The hopper finishes from where it stopped (when its last hop already saw the end, nothing is left to come).
    const last = stream({ after_seq: String(after), session_api_key: scoped });
    await last.opened;
    if (after < end) await last.until(end);
    hopper.push(...seqs(last));

    expect(seqs(steady)).toEqual(range(1, end));
    expect(hopper).toEqual(range(1, end));
    const ids = batches.flatMap((b) => b.events.map((e) => e.id));
    expect(steady.messages.slice(base).map((m) => m.id)).toEqual(ids);
    // A retried batch (the sandbox did not see its answer) changes nothing and sends nothing again.
    await post(batches[3]!.first, batches[3]!.events);
    await post(end + 1, [ev()]);
    await steady.until(end + 1);
    expect(seqs(steady)).toEqual(range(1, end + 1));
    await steady.close();
    await last.close();
  }, 60_000);

  it('sends an event over 32 KB as a reference, which the events route returns whole', async () => {
    const end = await committed();
    const c = stream({ after_seq: String(end), session_api_key: scoped });
    await c.opened;
    const big = { ...ev(), text: 'z'.repeat(100_000) };
    await post(end + 1, [big, ev()]);
    await c.until(end + 2);
    const [ref, small] = c.messages;
    expect(ref).toMatchObject({
      kind: 'EventReference',
      id: big.id,
      seq: end + 1,
      event_kind: 'MessageEvent',
      timestamp: big.timestamp,
      source: 'agent',
    });
    expect(ref!.bytes).toBeGreaterThan(MAX_MESSAGE_BYTES);
    expect(small).toMatchObject({ kind: 'MessageEvent', seq: end + 2 });
    const fetched = await stack.call('GET', ref!.href as string, { key: scoped });
    expect(fetched.status).toBe(200);
    expect(fetched.body.items).toEqual([big]);
    // A hostile agent's own "EventReference", pointing clients (and their key) elsewhere: sent as the server's reference.
    const spoof = {
      ...ev(),
      kind: 'EventReference',
      href: 'https://evil.example/collect',
      event_kind: 'MessageEvent',
      bytes: 10,
    };
    await post(end + 3, [spoof]);
    await c.until(end + 3);
    expect(c.messages[2]).toMatchObject({
      kind: 'EventReference',
      id: spoof.id,
      seq: end + 3,
      event_kind: 'EventReference',
      href: `/api/v1/events/search?conversation_id__eq=${cid}&after_seq=${end + 2}&limit=1`,
    });
    await c.close();
  });
});

describe('who may open a stream', () => {
  const refusedWith = async (c: StreamClient, code: number, reason?: string) => {
    const closed = await c.closed;
    expect(closed.code).toBe(code);
    if (reason) expect(closed.reason).toBe(reason);
    expect(c.frames).toEqual([]);
  };

  it("takes the session cookie from this API's own origin or an allowed one, never from a cross-site page", async () => {
    const res = await stack.call('POST', '/api/authenticate');
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(cookie).toMatch(new RegExp(`^acs_session_${new URL(stack.url).port}=`));
    const ok = stream({ resend_all: 'true' }, { cookie, origin: stack.url });
    await ok.until(1);
    await ok.close();
    await refusedWith(
      stream({ resend_all: 'true' }, { cookie, origin: 'https://evil.example' }),
      CLOSE.forbidden,
      REFUSALS.crossSite,
    );
    await refusedWith(stream({ resend_all: 'true' }, { cookie }), CLOSE.forbidden, REFUSALS.crossSite);
    // No credential at all: the socket waits for an auth frame (first-message auth); anything else ends it with 4001.
    const bare = stream({ resend_all: 'true' }, { origin: stack.url });
    await bare.opened;
    bare.ws.send(JSON.stringify({ role: 'user', content: [{ type: 'text', text: 'no auth first' }] }));
    await refusedWith(bare, CLOSE.authFailed, 'Authentication failed');
    // A second session cookie beside it (planted by a page on another port): refused, never picked.
    const other = (await stack.call('POST', '/api/authenticate', { key: await stack.newUser('stream-planter') }))
      .headers;
    const planted = (other.get('set-cookie') ?? '').split(';')[0]!;
    await refusedWith(
      stream({ resend_all: 'true' }, { cookie: `${planted}; ${cookie}`, origin: stack.url }),
      CLOSE.forbidden,
      SEVERAL_SESSIONS_REFUSAL,
    );
  });

  it("refuses a user API key in the URL, even the owner's own", async () => {
    for (const query of [
      { session_api_key: stack.devKey },
      { api_key: stack.devKey, session_api_key: scoped },
    ] as Record<string, string>[]) {
      await refusedWith(stream({ resend_all: 'true', ...query }), CLOSE.forbidden, REFUSALS.userKeyInUrl);
    }
    // In a header (a CLI client), as on every route.
    const header = stream({ resend_all: 'true' }, { 'x-session-api-key': stack.devKey });
    await header.until(1);
    await header.close();
  });

  it("refuses another conversation's scoped key, a revoked one, and anyone on another user's conversation (404-like)", async () => {
    // A second conversation of the same user, and one of bob's.
    const mine = await storedConversation(userId);
    const bobs = await storedConversation('bob');
    const bobKey = await stack.newUser('bob');
    const mineKey = await stack.services.conversationKeys.mint(userId, mine, 1);
    await refusedWith(stream({ session_api_key: mineKey }), CLOSE.forbidden, REFUSALS.otherConversation);
    // That key does open its own conversation.
    const own = stream({ session_api_key: mineKey }, undefined, mine);
    await own.opened;
    // A message to a conversation without a sandbox: the route's own refusal, as the close.
    own.ws.send(JSON.stringify({ content: [{ type: 'text', text: 'anyone there?' }] }));
    expect(await own.closed).toMatchObject({ code: 4409, reason: expect.stringContaining('no sandbox') });
    await refusedWith(
      stream({ resend_all: 'true' }, { 'x-session-api-key': bobKey }),
      CLOSE.notFound,
      REFUSALS.notFound,
    );
    await refusedWith(
      stream({ resend_all: 'true' }, { 'x-session-api-key': stack.devKey }, bobs),
      CLOSE.notFound,
      REFUSALS.notFound,
    );
    const bobScoped = await stack.services.conversationKeys.mint('bob', bobs, 1);
    await refusedWith(stream({ session_api_key: bobScoped }), CLOSE.forbidden, REFUSALS.otherConversation);
    // Bob cannot get a ticket for it either.
    expect((await stack.call('POST', `/api/v1/app-conversations/${cid}/stream-tickets`, { key: bobKey })).status).toBe(
      404,
    );
    // Revoked: the key handed out before stops opening the stream, and a stream it opened is closed.
    const held = stream({ session_api_key: mineKey }, undefined, mine);
    await held.opened;
    const revoked = await stack.call('POST', `/api/v1/app-conversations/${mine}/session-api-key/revoke`);
    expect(revoked.status).toBe(200);
    await refusedWith(stream({ session_api_key: mineKey }, undefined, mine), CLOSE.unauthorized);
    expect(await held.closed).toEqual({ code: CLOSE.unauthorized, reason: REFUSALS.revoked });
    // A ticket's stream ends with its conversation.
    const ticket = (await stack.call('POST', `/api/v1/app-conversations/${mine}/stream-tickets`)).body.ticket as string;
    const ticketed = stream({ ticket }, undefined, mine);
    await ticketed.opened;
    await new Promise((r) => setTimeout(r, PING_MS * 2));
    expect(ticketed.ws.readyState).toBe(ticketed.ws.OPEN);
    expect((await stack.call('DELETE', `/api/conversations/${mine}`)).status).toBe(200);
    expect(await ticketed.closed).toEqual({ code: CLOSE.unauthorized, reason: REFUSALS.revoked });
    await refusedWith(stream({}, { 'x-session-api-key': stack.devKey }, 'not-a-uuid'), CLOSE.badRequest);
  });

  it('opens with a ticket once; a used or expired ticket is refused, and only the owner gets one', async () => {
    const res = await stack.call('POST', `/api/v1/app-conversations/${cid}/stream-tickets`);
    expect(res.status, res.text).toBe(200);
    const { ticket, expires_at } = res.body as { ticket: string; expires_at: string };
    expect(Date.parse(expires_at)).toBeGreaterThan(Date.now());
    const ok = stream({ ticket, resend_all: 'true' });
    await ok.until(1);
    await ok.close();
    await refusedWith(stream({ ticket, resend_all: 'true' }), CLOSE.unauthorized, REFUSALS.ticket);
    // One stored with its expiry passed, the way the route stores them (only the hash).
    const id = randomBytes(16).toString('hex');
    const expired = `acst_${id}_${randomBytes(32).toString('base64url')}`;
    await new DynamoStreamTicketStore().put({
      ticketId: id,
      userId,
      conversationId: cid,
      hash: hashKey(expired),
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    await refusedWith(stream({ ticket: expired }), CLOSE.unauthorized, REFUSALS.ticket);
    // A ticket cannot be had without credentials, nor with the sandbox's key.
    expect((await stack.call('POST', `/api/v1/app-conversations/${cid}/stream-tickets`, { key: null })).status).toBe(
      401,
    );
    expect(
      (await stack.call('POST', `/api/v1/app-conversations/${cid}/stream-tickets`, { key: sandboxKey })).status,
    ).toBe(401);
    // A conversation key does not mint tickets (it opens the stream itself).
    expect((await stack.call('POST', `/api/v1/app-conversations/${cid}/stream-tickets`, { key: scoped })).status).toBe(
      403,
    );
  });

  it("refuses the sandbox's own key (a hostile agent on loopback), in the URL or in a header", async () => {
    await refusedWith(stream({ resend_all: 'true', session_api_key: sandboxKey }), CLOSE.unauthorized);
    await refusedWith(stream({ resend_all: 'true' }, { 'x-session-api-key': sandboxKey }), CLOSE.unauthorized);
  });

  it('answers other paths with a plain 404 and takes no upgrade there', async () => {
    const c = openStream(eventsUrl(stack.url, ''));
    clients.push(c);
    await expect(c.opened).rejects.toThrow(/404/);
    const other = new URL(stack.url.replace('http', 'ws'));
    const raw = openStream(eventsUrl(`${other.origin.replace('ws', 'http')}/api`, cid));
    clients.push(raw);
    await expect(raw.opened).rejects.toThrow(/404/);
  });
});

describe('keeping a connection alive', () => {
  it('pings every client; one that answers stays open, one that never answers is closed (4408)', async () => {
    const alive = stream({ session_api_key: scoped });
    let pings = 0;
    alive.ws.on('ping', () => pings++);
    const silent = stream({ session_api_key: scoped }, undefined, cid, false);
    const closed = await silent.closed;
    expect(closed.code).toBe(CLOSE.idle);
    expect(closed.reason).toMatch(/No pong/);
    expect(pings).toBeGreaterThanOrEqual(1);
    expect(alive.ws.readyState).toBe(alive.ws.OPEN);
    // Still delivering after those rounds.
    const end = await committed();
    await post(end + 1, [ev()]);
    await alive.until(end + 1);
    await alive.close();
  });
});

describe('the events route as a stream client uses it', () => {
  it('after_seq returns the events after a position; with page_id or descending it is refused naming the field', async () => {
    const page = await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${cid}&after_seq=2&limit=2`);
    const all = await allEvents(stack, cid);
    expect(page.body.items).toEqual(all.slice(2, 4));
    for (const q of ['&sort_order=TIMESTAMP_DESC', `&page_id=${encodeURIComponent(page.body.next_page_id)}`]) {
      const res = await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${cid}&after_seq=2${q}`);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['query', 'after_seq']);
    }
    expect((await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${cid}&after_seq=-1`)).status).toBe(422);
  });
});
