import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOSE } from '#shared/stream/messages.ts';
import { CLOSE_TOO_MANY, MAX_PENDING_SOCKETS_PER_IP, tooManyPending } from '#shared/stream/socket-caps.ts';
import { conversation, startConversation } from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';
import { eventsUrl, openStream, type StreamClient } from '#test/helpers/stream-client.ts';

// The event socket as Agent Canvas and the agent server's clients use it: no credential in the URL,
// the key in a first frame `{"type": "auth", "session_api_key": ...}`, `resend_mode=all|since`.
let agent: AgentStack;
let stack: TestStack;
let cid: string;
let other: string;
let sid: string;
let sandboxKey: string;
let scoped: string;
let otherScoped: string;
const clients: StreamClient[] = [];

beforeAll(async () => {
  agent = await startAgentStack({ script: [reply.finish('ready'), reply.finish('second'), reply.finish('heard you')] });
  stack = agent.stack;
  const [a, b] = await Promise.all([
    startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } }),
    startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } }),
  ]);
  cid = a.app_conversation_id;
  other = b.app_conversation_id;
  sid = a.sandbox_id!;
  for (const id of [cid, other])
    await waitFor('finished', () => conversation(stack, id), {
      until: (c) => c?.execution_status === 'finished',
      timeoutMs: 60_000,
    });
  sandboxKey = (await stack.sandboxKey(sid))!;
  scoped = (await conversation(stack, cid))!.session_api_key!;
  otherScoped = (await conversation(stack, other))!.session_api_key!;
}, 150_000);
afterAll(async () => {
  for (const c of clients) c.ws.terminate();
  await agent?.stop();
});

const stream = (query: Record<string, string> = {}, headers?: Record<string, string>, id = cid) => {
  const c = openStream(eventsUrl(stack.url, id, query), { headers });
  clients.push(c);
  return c;
};
const auth = (c: StreamClient, key: unknown) =>
  c.opened.then(() => c.ws.send(JSON.stringify({ type: 'auth', session_api_key: key })));
const committed = async (id = cid) =>
  (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`)).body as number;

describe('first-message auth on the event socket', () => {
  it("opens with the conversation's key in the first frame (resend_mode=all), and with the owner's API key there", async () => {
    const n = await committed();
    const c = stream({ resend_mode: 'all' }, { origin: 'http://localhost:8000' });
    await auth(c, scoped);
    await c.until(n);
    expect(c.messages.map((m) => m.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    // A redundant auth frame later is ignored (the agent server does so): the socket stays open.
    c.ws.send(JSON.stringify({ type: 'auth', session_api_key: scoped }));
    const byKey = stream({ resend_mode: 'all' });
    await auth(byKey, stack.devKey);
    await byKey.until(n);
    await c.close();
    await byKey.close();
  });

  it('a user message sent right after the auth frame reaches the agent, whose answer arrives', async () => {
    const c = stream({ resend_mode: 'all' });
    await c.opened;
    // Both frames at once: the message must not be lost while the key is checked.
    c.ws.send(JSON.stringify({ type: 'auth', session_api_key: scoped }));
    c.ws.send(JSON.stringify({ role: 'user', content: [{ type: 'text', text: 'right after auth' }], run: true }));
    await waitFor("the agent's answer", async () => c.messages, {
      until: (ms) => ms.some((m) => JSON.stringify(m).includes('heard you')),
      timeoutMs: 30_000,
    });
    expect(c.messages.some((m) => m.source === 'user' && JSON.stringify(m).includes('right after auth'))).toBe(true);
    await waitFor('finished again', () => conversation(stack, cid), {
      until: (v) => v?.execution_status === 'finished',
      timeoutMs: 30_000,
    });
    await c.close();
  }, 60_000);

  it('closes 4001 on a wrong, foreign, malformed or missing auth frame, sending nothing', async () => {
    const cases: [string, (c: StreamClient) => unknown][] = [
      ['a wrong key', (c) => auth(c, 'acsc.bogus.key')],
      ['a made-up user key', (c) => auth(c, `acs_${'0'.repeat(16)}_${'x'.repeat(43)}`)],
      ["another conversation's key", (c) => auth(c, otherScoped)],
      ['a sandbox key', (c) => auth(c, sandboxKey)],
      ['a key that is not a string', (c) => auth(c, { $ne: null })],
      ['an empty key', (c) => auth(c, '')],
      ['a user message first', (c) => c.opened.then(() => c.ws.send(JSON.stringify({ role: 'user', content: [] })))],
      ['not JSON', (c) => c.opened.then(() => c.ws.send('{"type": "auth"'))],
      [
        'a binary frame',
        (c) => c.opened.then(() => c.ws.send(Buffer.from(JSON.stringify({ type: 'auth', session_api_key: scoped })))),
      ],
      ['an oversized key', (c) => auth(c, `acsc.${'a'.repeat(600)}`)],
    ];
    await Promise.all(
      cases.map(async ([what, send]) => {
        const c = stream({ resend_mode: 'all' });
        await send(c);
        expect(await c.closed, what).toEqual({ code: CLOSE.authFailed, reason: 'Authentication failed' });
        expect(c.frames, what).toEqual([]);
      }),
    );
    // The other user's conversation with the caller's own valid key: 4001 too (nothing says it exists).
    const bob = await stack.newUser('bob-first-auth');
    const probe = stream({ resend_mode: 'all' });
    await auth(probe, bob);
    expect(await probe.closed).toEqual({ code: CLOSE.authFailed, reason: 'Authentication failed' });
    // A credential in the URL is judged at once, as before: 4401 stays for today's modes.
    const bad = stream({ session_api_key: 'acsc.bogus' });
    expect((await bad.closed).code).toBe(CLOSE.unauthorized);
  });

  it('closes 4001 after 10 s without a frame', async () => {
    const c = stream({ resend_mode: 'all' });
    await c.opened;
    const t0 = Date.now();
    expect(await c.closed).toEqual({ code: CLOSE.authFailed, reason: 'Authentication failed' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(9_500);
    expect(c.frames).toEqual([]);
  }, 20_000);
});

describe('sockets pending their auth frame, per client address', () => {
  const from = (address: string) => {
    const c = openStream(eventsUrl(stack.url, cid, { resend_mode: 'all' }), { localAddress: address });
    clients.push(c);
    return c;
  };
  /** 'open' once open and still open a moment later, else the close code. */
  const outcome = async (c: StreamClient): Promise<'open' | number> => {
    const closed = c.closed.then((x) => x.code);
    await Promise.race([c.opened, closed]);
    return Promise.race([closed, new Promise<'open'>((r) => setTimeout(() => r('open'), 200))]);
  };

  it(`holds them to ${MAX_PENDING_SOCKETS_PER_IP} an address (4429, as \`$connect\`'s 429 on AWS); another address is not held; an authenticated or closed one gives its slot back`, async () => {
    const first = Array.from({ length: MAX_PENDING_SOCKETS_PER_IP }, () => from('127.0.0.2'));
    expect(await Promise.all(first.map(outcome))).toEqual(first.map(() => 'open'));
    const over = from('127.0.0.2');
    expect(await outcome(over)).toBe(CLOSE_TOO_MANY);
    expect((await over.closed).reason).toBe(tooManyPending());
    expect(await outcome(from('127.0.0.3'))).toBe('open');
    // Authenticated, a socket is no longer pending; closed, it gives its slot back: two more fit, not three.
    await auth(first[0]!, scoped);
    await first[0]!.until(1);
    await first[1]!.close();
    const again = [from('127.0.0.2'), from('127.0.0.2')];
    expect(await Promise.all(again.map(outcome))).toEqual(['open', 'open']);
    expect(await outcome(from('127.0.0.2'))).toBe(CLOSE_TOO_MANY);
    for (const c of [...first, ...again]) c.ws.terminate();
  });
});

describe('resend_mode=since&after_timestamp=', () => {
  it('sends the events strictly after the timestamp, ties in seq order, then live ones', async () => {
    const base = await committed();
    // Far-future times so the agent's own events are all before them.
    const t = (s: number) => `2099-01-01T00:00:0${s}.000Z`;
    const mk = (i: number, ts: string) => ({ kind: 'MessageEvent', id: `since-${i}`, timestamp: ts, source: 'agent' });
    const events = [mk(1, t(1)), mk(2, t(2)), mk(3, t(2)), mk(4, t(3))];
    const res = await stack.call('POST', `/api/v1/webhooks/${sid}/events/${cid}?first_seq=${base + 1}`, {
      key: sandboxKey,
      body: events,
    });
    expect(res.status, res.text).toBe(200);
    const since = async (ts: string, expected: string[]) => {
      const c = stream({ resend_mode: 'since', after_timestamp: ts });
      await auth(c, scoped);
      if (expected.length) await c.until(base + 4);
      else await new Promise((r) => setTimeout(r, 500));
      expect(
        c.messages.map((m) => m.id),
        ts,
      ).toEqual(expected);
      return c;
    };
    await (await since(t(1), ['since-2', 'since-3', 'since-4'])).close();
    await (await since('2099-01-01T00:00:01.500Z', ['since-2', 'since-3', 'since-4'])).close();
    await (await since(t(2), ['since-4'])).close();
    // Before every event: all of them, from seq 1.
    const all = stream({ resend_mode: 'since', after_timestamp: '2000-01-01T00:00:00Z' });
    await auth(all, scoped);
    await all.until(base + 4);
    expect(all.messages.map((m) => m.seq)).toEqual(Array.from({ length: base + 4 }, (_, i) => i + 1));
    await all.close();
    // After the last: nothing resent, then the next event live.
    const live = await since(t(3), []);
    await stack.call('POST', `/api/v1/webhooks/${sid}/events/${cid}?first_seq=${base + 5}`, {
      key: sandboxKey,
      body: [mk(5, t(4))],
    });
    await live.until(base + 5);
    expect(live.messages.map((m) => m.id)).toEqual(['since-5']);
    await live.close();
    // Without a timestamp nothing is resent (the agent server's rule); a bad one is refused naming the field.
    const none = await since('', []);
    await none.close().catch(() => {});
  });

  it('refuses an after_timestamp that is not a date-time, naming it', async () => {
    const c = stream({ resend_mode: 'since', after_timestamp: 'yesterday' });
    await auth(c, scoped);
    const closed = await c.closed;
    expect(closed.code).toBe(CLOSE.badRequest);
    expect(closed.reason).toContain('after_timestamp');
    const mode = stream({ resend_mode: 'some' }, { 'x-session-api-key': scoped });
    expect((await mode.closed).reason).toContain('resend_mode');
  });
});
