import { describe, expect, it } from 'vitest';
import { ApiKeys } from '#shared/auth/api-keys.ts';
import { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { ApiKeyRecord, SessionRecord } from '#shared/auth/model.ts';
import { Sessions } from '#shared/auth/sessions.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import type { ConversationRef, EventPage, EventQuery, EventStore } from '#shared/events/event-store.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import {
  authorizeStream,
  REFUSALS,
  StreamAccess,
  type StreamAccessDeps,
  type StreamGrant,
  type StreamRefusal,
} from '#shared/stream/access.ts';
import { LocalEventHub } from '#shared/stream/local-event-hub.ts';
import {
  CLOSE,
  MAX_MESSAGE_BYTES,
  startAfter,
  streamMessage,
  streamQuerySchema,
  type EventReference,
} from '#shared/stream/messages.ts';
import type { StreamTicketRecord, StreamTicketStore } from '#shared/stream/ticket-store.ts';
import { StreamTickets, TICKET_SECONDS } from '#shared/stream/tickets.ts';
import { Accounts } from '#shared/accounts/accounts.ts';
import { Audit } from '#shared/accounts/audit.ts';
import { MemoryAccountStore, MemoryAuditStore } from '#test/helpers/memory-accounts.ts';
import { waitUntil } from '#test/helpers/wait.ts';

const CID = 'a'.repeat(32);
const OTHER = 'b'.repeat(32);
const event = (n: number, extra: Record<string, unknown> = {}): AgentEventEnvelope => ({
  kind: 'MessageEvent',
  id: `e${n}`,
  timestamp: '2026-01-01T00:00:00Z',
  source: 'agent',
  ...extra,
});

describe('stream messages', () => {
  it("is the V1 event with the server's seq, replacing a seq the agent put in it", () => {
    const msg = JSON.parse(streamMessage(CID, 7, event(1, { seq: 999, text: 'hi' })));
    expect(msg).toEqual({
      kind: 'MessageEvent',
      id: 'e1',
      timestamp: '2026-01-01T00:00:00Z',
      source: 'agent',
      text: 'hi',
      seq: 7,
    });
  });

  it('sends an event over 32 KB as a reference to the events route that returns exactly it', () => {
    const big = event(2, { text: 'x'.repeat(MAX_MESSAGE_BYTES) });
    const text = streamMessage(CID, 12, big);
    expect(Buffer.byteLength(text)).toBeLessThan(1024);
    const ref = JSON.parse(text) as EventReference;
    expect(ref).toMatchObject({
      kind: 'EventReference',
      id: 'e2',
      source: 'agent',
      timestamp: big.timestamp,
      seq: 12,
      event_kind: 'MessageEvent',
    });
    expect(ref.bytes).toBeGreaterThan(MAX_MESSAGE_BYTES);
    expect(ref.href).toBe(`/api/v1/events/search?conversation_id__eq=${CID}&after_seq=11&limit=1`);
  });

  it('never passes on an EventReference the agent wrote: its href could point a client, with its key, anywhere', () => {
    const spoof = event(3, { kind: 'EventReference', href: 'https://evil.example/collect', bytes: 1 });
    const ref = JSON.parse(streamMessage(CID, 5, spoof)) as EventReference;
    expect(ref.href).toBe(`/api/v1/events/search?conversation_id__eq=${CID}&after_seq=4&limit=1`);
    expect(ref.event_kind).toBe('EventReference');
  });

  it('counts bytes, not characters, at the boundary', () => {
    const base = Buffer.byteLength(streamMessage(CID, 1, event(1, { text: '' })));
    const fits = event(1, { text: 'y'.repeat(MAX_MESSAGE_BYTES - base) });
    expect(Buffer.byteLength(streamMessage(CID, 1, fits))).toBe(MAX_MESSAGE_BYTES);
    expect(JSON.parse(streamMessage(CID, 1, fits)).kind).toBe('MessageEvent');
    // Two bytes per character: the same length in characters no longer fits.
    expect(JSON.parse(streamMessage(CID, 1, event(1, { text: 'é'.repeat(MAX_MESSAGE_BYTES - base) }))).kind).toBe(
      'EventReference',
    );
  });

  it('starts after after_seq, else from the start with resend_all, else at the committed end', () => {
    const q = (query: Record<string, string>) => streamQuerySchema.parse(query);
    expect(startAfter(q({ resend_all: 'true' }), 40)).toBe(0);
    expect(startAfter(q({}), 40)).toBe(40);
    expect(startAfter(q({ resend_all: 'false' }), 40)).toBe(40);
    expect(startAfter(q({ resend_all: 'true', after_seq: '17' }), 40)).toBe(17);
    expect(startAfter(q({ after_seq: '0' }), 40)).toBe(0);
    for (const bad of ['-1', '1.5', 'x', '', '1e400', '99999999999999999', ' 1'])
      expect(streamQuerySchema.safeParse({ after_seq: bad }).success, bad).toBe(false);
    expect(streamQuerySchema.safeParse({ resend_all: 'yes' }).success).toBe(false);
  });
});

// --- who may open a stream -------------------------------------------------------------------
class MemoryTickets implements StreamTicketStore {
  readonly items = new Map<string, StreamTicketRecord>();
  async put(r: StreamTicketRecord) {
    if (this.items.has(r.ticketId)) throw new Error('exists');
    this.items.set(r.ticketId, r);
  }
  async take(id: string, hash: string, now: Date) {
    const r = this.items.get(id);
    if (!r || r.hash !== hash || Date.parse(r.expiresAt) <= now.getTime()) return undefined;
    this.items.delete(id);
    return r;
  }
}

function world() {
  let clock = new Date('2026-01-01T00:00:00Z');
  const now = () => clock;
  const keys = new Map<string, ApiKeyRecord>();
  const sessions = new Map<string, SessionRecord>();
  const conversations = new Map<string, ConversationRecord>([
    [`alice#${CID}`, { id: CID, userId: 'alice', keyVersion: 1 } as ConversationRecord],
    [`alice#${OTHER}`, { id: OTHER, userId: 'alice', keyVersion: 1 } as ConversationRecord],
    [`bob#${'c'.repeat(32)}`, { id: 'c'.repeat(32), userId: 'bob', keyVersion: 1 } as ConversationRecord],
  ]);
  const conversationStore = { get: async (u: string, id: string) => conversations.get(`${u}#${id}`) };
  const apiKeys = new ApiKeys(
    {
      create: async (r) => void keys.set(r.keyId, r),
      get: async (id) => keys.get(id),
      listByUser: async (u) => [...keys.values()].filter((k) => k.userId === u),
      revoke: async () => true,
      touch: async () => {},
    },
    now,
  );
  const ticketStore = new MemoryTickets();
  const deps: StreamAccessDeps = {
    apiKeys,
    sessions: new Sessions(
      {
        create: async (r) => void sessions.set(r.sessionId, r),
        get: async (id) => sessions.get(id),
        delete: async (id) => void sessions.delete(id),
      },
      apiKeys,
      () => 3600,
      now,
    ),
    conversationKeys: new ConversationKeys(
      async () => Buffer.alloc(32, 7),
      async (u, id) => conversations.get(`${u}#${id}`)?.keyVersion,
    ),
    tickets: new StreamTickets(ticketStore, conversationStore, now),
    conversations: conversationStore,
    accounts: new Accounts(new MemoryAccountStore(), new Audit(new MemoryAuditStore())),
    oidc: null,
    allowedOrigins: ['https://ui.example'],
  };
  return { deps, ticketStore, tick: (seconds: number) => (clock = new Date(clock.getTime() + seconds * 1000)) };
}

const open = (deps: StreamAccessDeps, query: Record<string, string>, headers: Record<string, string> = {}, id = CID) =>
  authorizeStream(
    { conversationId: id, query, headers: { host: 'api.example', 'x-forwarded-proto': 'https', ...headers } },
    deps,
  );
const refused = (r: StreamGrant | StreamRefusal) =>
  r.allowed ? { allowed: true } : { status: r.status, code: r.code, reason: r.reason };

describe('authorizeStream', () => {
  it('opens with the conversation-scoped key in the query, for its own conversation only', async () => {
    const { deps } = world();
    const key = await deps.conversationKeys.mint('alice', CID, 1);
    expect(await open(deps, { session_api_key: key, resend_all: 'true' })).toMatchObject({
      allowed: true,
      userId: 'alice',
      conversationId: CID,
      via: 'conversation',
      query: { resend_all: true },
    });
    // The same key on the user's other conversation: refused, naming why.
    expect(refused(await open(deps, { session_api_key: key }, {}, OTHER))).toEqual({
      status: 403,
      code: CLOSE.forbidden,
      reason: REFUSALS.otherConversation,
    });
    // Revoked (version bumped), forged or not a conversation key at all.
    expect(
      refused(await open(deps, { session_api_key: await deps.conversationKeys.mint('alice', CID, 2) })),
    ).toMatchObject({ status: 401, code: CLOSE.unauthorized });
    expect(refused(await open(deps, { session_api_key: `${key.slice(0, -2)}AA` }))).toMatchObject({ status: 401 });
    expect(refused(await open(deps, { session_api_key: 'garbage' }))).toMatchObject({ status: 401 });
  });

  it('refuses a user API key anywhere in the URL, even beside a valid credential', async () => {
    const { deps } = world();
    const { key } = await deps.apiKeys.create('alice', 'k');
    const scoped = await deps.conversationKeys.mint('alice', CID, 1);
    // The last: a repeated parameter, joined by the gateway (as API Gateway does) with the scoped key first.
    for (const query of [
      { session_api_key: key },
      { api_key: key },
      { token: key, session_api_key: scoped },
      { ticket: key },
      { session_api_key: `${scoped},${key}` },
    ] as Record<string, string>[]) {
      const r = await open(deps, query);
      expect(refused(r), JSON.stringify(Object.keys(query))).toEqual({
        status: 403,
        code: CLOSE.forbidden,
        reason: REFUSALS.userKeyInUrl,
      });
    }
    // Before anything else is looked at.
    expect(refused(await open(deps, { session_api_key: key }, {}, 'not-an-id'))).toMatchObject({
      status: 403,
      reason: REFUSALS.userKeyInUrl,
    });
    // In a header (a CLI client), the same key works as on every route.
    expect(await open(deps, {}, { 'x-session-api-key': key })).toMatchObject({ allowed: true, via: 'key' });
    expect(await open(deps, {}, { authorization: `Bearer ${key}` })).toMatchObject({ allowed: true, via: 'key' });
  });

  it('takes the session cookie only with an allowed or own Origin (a cross-site page cannot use it)', async () => {
    const { deps } = world();
    const { record } = await deps.apiKeys.create('alice', 'k');
    const { token } = await deps.sessions.create('alice', record.keyId);
    const cookie = `__Host-acs_session=${token}`;
    expect(await open(deps, {}, { cookie, origin: 'https://ui.example' })).toMatchObject({
      allowed: true,
      via: 'session',
    });
    expect(await open(deps, {}, { cookie, origin: 'https://api.example' })).toMatchObject({
      allowed: true,
      via: 'session',
    });
    expect(refused(await open(deps, {}, { cookie, origin: 'https://evil.example' }))).toEqual({
      status: 403,
      code: CLOSE.forbidden,
      reason: REFUSALS.crossSite,
    });
    expect(refused(await open(deps, {}, { cookie, origin: 'null' }))).toMatchObject({ status: 403 });
    expect(refused(await open(deps, {}, { cookie }))).toMatchObject({ status: 403 });
    expect(refused(await open(deps, {}, {}))).toEqual({
      status: 401,
      code: CLOSE.unauthorized,
      reason: REFUSALS.unauthorized,
    });
  });

  it("answers another user's conversation, and an unknown one, as not found", async () => {
    const { deps } = world();
    const { key } = await deps.apiKeys.create('alice', 'k');
    expect(refused(await open(deps, {}, { 'x-session-api-key': key }, 'c'.repeat(32)))).toEqual({
      status: 404,
      code: CLOSE.notFound,
      reason: REFUSALS.notFound,
    });
    expect(refused(await open(deps, {}, { 'x-session-api-key': key }, 'd'.repeat(32)))).toMatchObject({ status: 404 });
    // The id as the UI writes it (dashes) is the same conversation.
    const dashed = `${'a'.repeat(8)}-${'a'.repeat(4)}-${'a'.repeat(4)}-${'a'.repeat(4)}-${'a'.repeat(12)}`;
    expect(await open(deps, {}, { 'x-session-api-key': key }, dashed.toUpperCase())).toMatchObject({
      allowed: true,
      conversationId: CID,
    });
    expect(refused(await open(deps, {}, { 'x-session-api-key': key }, '../x'))).toMatchObject({
      status: 400,
      code: CLOSE.badRequest,
    });
    expect(refused(await open(deps, { after_seq: '-3' }, { 'x-session-api-key': key }))).toMatchObject({
      status: 400,
      reason: expect.stringContaining('after_seq'),
    });
  });

  it('takes a ticket once, for its own conversation, until it expires', async () => {
    const { deps, ticketStore, tick } = world();
    const { ticket, expires_at } = await deps.tickets.issue('alice', CID);
    expect(ticket).toMatch(/^acst_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(expires_at)).toBe(Date.parse('2026-01-01T00:00:00Z') + TICKET_SECONDS * 1000);
    // Only its hash is stored.
    // (The secret is base64url, which may itself hold '_': everything after the id.)
    const secret = /^acst_[0-9a-f]{32}_(.+)$/.exec(ticket)![1]!;
    expect(JSON.stringify([...ticketStore.items.values()])).not.toContain(secret);
    const first = open(deps, { ticket });
    const second = open(deps, { ticket });
    const results = await Promise.all([first, second]);
    expect(results.filter((r) => r.allowed)).toHaveLength(1);
    expect(results.map(refused)).toContainEqual({ status: 401, code: CLOSE.unauthorized, reason: REFUSALS.ticket });

    const expiring = await deps.tickets.issue('alice', CID);
    tick(TICKET_SECONDS);
    expect(refused(await open(deps, { ticket: expiring.ticket }))).toMatchObject({
      status: 401,
      reason: REFUSALS.ticket,
    });

    const elsewhere = await deps.tickets.issue('alice', OTHER);
    expect(refused(await open(deps, { ticket: elsewhere.ticket }))).toMatchObject({
      status: 403,
      reason: REFUSALS.otherConversation,
    });
    // Used up by that refusal too: no second try on the right conversation.
    expect(refused(await open(deps, { ticket: elsewhere.ticket }, {}, OTHER))).toMatchObject({ status: 401 });
    // A wrong secret for a real ticket id consumes nothing.
    const real = await deps.tickets.issue('alice', CID);
    const forged = `${real.ticket.slice(0, 38)}${'A'.repeat(43)}`;
    expect(refused(await open(deps, { ticket: forged }))).toMatchObject({ status: 401 });
    expect(await open(deps, { ticket: real.ticket })).toMatchObject({ allowed: true, via: 'ticket' });
    await expect(deps.tickets.issue('alice', 'c'.repeat(32))).rejects.toMatchObject({ status: 404 });
  });

  it('keeps an open stream only while its credentials still hold (session ended: no longer)', async () => {
    const { deps } = world();
    const { allowedOrigins, ...rest } = deps;
    const access = new StreamAccess(rest);
    const { record } = await deps.apiKeys.create('alice', 'k');
    const { token } = await deps.sessions.create('alice', record.keyId);
    const input = {
      conversationId: CID,
      query: {},
      headers: {
        host: 'api.example',
        'x-forwarded-proto': 'https',
        cookie: `__Host-acs_session=${token}`,
        origin: 'https://ui.example',
      },
    };
    const grant = await access.authorize(input, allowedOrigins);
    if (!grant.allowed) throw new Error(grant.reason);
    expect(await access.stillValid(grant, input, allowedOrigins)).toBe(true);
    await deps.sessions.end(token);
    expect(await access.stillValid(grant, input, allowedOrigins)).toBe(false);
    // A ticket's stream: while the conversation is the user's.
    const { ticket } = await deps.tickets.issue('alice', CID);
    const byTicket = await access.authorize({ ...input, query: { ticket }, headers: {} }, allowedOrigins);
    if (!byTicket.allowed) throw new Error(byTicket.reason);
    expect(await access.stillValid(byTicket, { ...input, query: { ticket }, headers: {} }, allowedOrigins)).toBe(true);
  });

  it('keeps every reason within a close frame (123 bytes)', () => {
    for (const reason of Object.values(REFUSALS)) expect(Buffer.byteLength(reason), reason).toBeLessThanOrEqual(123);
  });
});

// --- the delivery rule, over a store whose batches land in any order -------------------------
class MemoryEvents implements EventStore {
  readonly stored = new Map<number, AgentEventEnvelope>();
  last = 0;
  reads = 0;
  async append(_c: ConversationRef, firstSeq: number, events: AgentEventEnvelope[]) {
    for (const [i, e] of events.entries()) if (!this.stored.has(firstSeq + i)) this.stored.set(firstSeq + i, e);
    while (this.stored.has(this.last + 1)) this.last++;
    return { added: events.length, lastSeq: this.last };
  }
  async lastSeq() {
    return this.last;
  }
  async head() {
    return { lastSeq: this.last };
  }
  async query(_c: ConversationRef, q: EventQuery): Promise<EventPage> {
    this.reads++;
    await new Promise((r) => setTimeout(r, Math.random() * 3));
    const items: AgentEventEnvelope[] = [];
    let next = ((q.startKey?.seq as number) ?? 0) + 1;
    while (items.length < q.limit && this.stored.has(next)) items.push(this.stored.get(next++)!);
    return { items, tailKey: { seq: next - 1 } };
  }
  async count() {
    return this.last;
  }
}

describe('LocalEventHub', () => {
  const ref = { userId: 'alice', conversationId: CID };

  it('delivers every event once, in order, never past the committed end, with batches and notifications in any order', async () => {
    const store = new MemoryEvents();
    const hub = new LocalEventHub(() => store);
    const got: number[] = [];
    let failed: unknown;
    const client = {
      send: async (m: string) => {
        await new Promise((r) => setTimeout(r, Math.random() * 2));
        got.push(JSON.parse(m).seq);
      },
      fail: (e: unknown) => (failed = e),
    };
    await store.append(ref, 1, [event(1), event(2)]);
    const sub = await hub.subscribe(ref, () => 0, client);
    // 40 batches of 5, posted shuffled and concurrently; each post tells the hub the end it read.
    const batches = Array.from({ length: 40 }, (_, b) => b * 5 + 3).sort(() => Math.random() - 0.5);
    const seen: number[] = [];
    await Promise.all(
      batches.map(async (first, i) => {
        await new Promise((r) => setTimeout(r, i % 7));
        const { lastSeq: end } = await store.append(
          ref,
          first,
          [0, 1, 2, 3, 4].map((k) => event(first + k)),
        );
        seen.push(end);
        await hub.committed(ref, end);
        // Never past what is committed at any moment.
        expect(Math.max(0, ...got)).toBeLessThanOrEqual(store.last);
      }),
    );
    await hub.committed(ref, 3); // a stale, smaller end changes nothing
    await waitUntil('all 202 deliveries', () => got.length === 202);
    expect(got).toEqual(Array.from({ length: 202 }, (_, i) => i + 1));
    expect(failed).toBeUndefined();
    expect(sub.position).toBe(202);
    sub.close();
    expect(hub.size).toBe(0);
  });

  it('sockets of one conversation at one place share each read: five replays opened together read the history once', async () => {
    const store = new MemoryEvents();
    for (let first = 1; first <= 1_000; first += 100)
      await store.append(
        ref,
        first,
        Array.from({ length: 100 }, (_, i) => event(first + i)),
      );
    let reads = 0;
    const query = store.query.bind(store);
    store.query = (...args: Parameters<typeof store.query>) => {
      reads++;
      return query(...args);
    };
    const hub = new LocalEventHub(() => store);
    const got = Array.from({ length: 5 }, () => [] as number[]);
    await Promise.all(
      got.map((g) =>
        hub.subscribe(ref, () => 0, { send: async (m) => void g.push(JSON.parse(m).seq), fail: () => undefined }),
      ),
    );
    await waitUntil('1,000 events to every client', () => got.every((g) => g.length === 1_000));
    for (const g of got) expect(g).toEqual(Array.from({ length: 1_000 }, (_, i) => i + 1));
    // Ten pages of 100, each read once for the five (a subscription alone would read them ten times each).
    expect(reads).toBe(10);
  });

  it('ends a subscription whose client fails, and sends nothing more to it', async () => {
    const store = new MemoryEvents();
    const hub = new LocalEventHub(() => store);
    await store.append(ref, 1, [event(1), event(2)]);
    let sent = 0;
    let failed = false;
    await hub.subscribe(ref, () => 0, {
      send: async () => {
        if (++sent === 2) throw new Error('socket gone');
      },
      fail: () => (failed = true),
    });
    await waitUntil('the failed send', () => failed);
    await store.append(ref, 3, [event(3)]);
    await hub.committed(ref, 3);
    expect(sent).toBe(2);
    expect(hub.size).toBe(0);
  });
});
