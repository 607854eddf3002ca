import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTables, startDynalite, useLocalTables, type EmbeddedDynamo } from '#infra/local/dynamo.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import type { ConversationRef } from '#shared/events/event-store.ts';
import type { ConnectionPush } from '#shared/stream/connection-push.ts';
import { DynamoConnectionStore } from '#shared/stream/dynamo-connection-store.ts';
import { PushDelivery } from '#shared/stream/push-delivery.ts';
import type { ResendRequest } from '#shared/stream/resend-trigger.ts';
import { SocketStream } from '#shared/stream/socket-stream.ts';

/**
 * The AWS event feed's delivery rule on the real stores (dynalite): several ingest functions at
 * once, each with its own `PushDelivery` (as separate Lambdas), a push that yields at random so
 * their sends interleave; every connection must see each committed event once, in order. The
 * push is faked at its boundary (API Gateway's @connections); the tier runs the real one.
 */
let dynamo: EmbeddedDynamo;
let connections: DynamoConnectionStore;
let events: DynamoEventStore;

/** @connections in memory: messages per connection, which connections are open, a random pause per call. */
class FakePush implements ConnectionPush {
  readonly received = new Map<string, number[]>();
  readonly open = new Set<string>();
  isOpenCalls = 0;
  async post(connectionId: string, data: string): Promise<'sent' | 'gone'> {
    await new Promise((r) => setTimeout(r, Math.random() * 4));
    if (!this.open.has(connectionId)) return 'gone';
    this.received.set(connectionId, [...(this.received.get(connectionId) ?? []), JSON.parse(data).seq]);
    return 'sent';
  }
  async isOpen(connectionId: string): Promise<boolean> {
    this.isOpenCalls++;
    return this.open.has(connectionId);
  }
  async drop(connectionId: string): Promise<void> {
    this.open.delete(connectionId);
  }
}

const event = (n: number) => ({
  kind: 'MessageEvent',
  id: `e${n}`,
  timestamp: new Date().toISOString(),
  source: 'agent' as const,
});
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
let counter = 0;
const conversation = (): ConversationRef => ({ userId: 'u1', conversationId: `c${++counter}` });

async function connect(push: FakePush, c: ConversationRef, id: string, sentSeq = 0, open = true) {
  await connections.add({
    conversation: c,
    connectionId: id,
    sentSeq,
    connectedAt: new Date(),
    expiresAt: new Date(Date.now() + 7_200_000),
  });
  if (open) push.open.add(id);
}

beforeAll(async () => {
  dynamo = await startDynalite();
  useLocalTables(dynamo.endpoint, 'push-delivery');
  await createTables(dynamo.endpoint, 'push-delivery');
  connections = new DynamoConnectionStore();
  events = new DynamoEventStore();
});
afterAll(() => dynamo?.close());

/** The resend function's step over `push`, with the continuations it asks for kept in `requests` (none is invoked). */
function resendStep(push: FakePush): { stream: SocketStream; requests: ResendRequest[] } {
  const requests: ResendRequest[] = [];
  const stream = new SocketStream({
    delivery: new PushDelivery(connections, events, push, { sleep: async () => {} }),
    resendTrigger: { request: async (r: ResendRequest) => void requests.push(r) },
  } as unknown as ConstructorParameters<typeof SocketStream>[0]);
  return { stream, requests };
}
describe('PushDelivery', () => {
  it('concurrent ingests out of order: each connection gets every event once, in order', async () => {
    const push = new FakePush();
    const c = conversation();
    for (const id of ['a', 'b', 'c']) await connect(push, c, id);
    await Promise.all(
      ['a', 'b', 'c'].map((id) => new PushDelivery(connections, events, push, { sleep: async () => {} }).resend(c, id)),
    );
    // 30 batches of 3, posted in a shuffled order by 30 "functions" at once.
    const batches = range(0, 29).map((b) => ({
      first: b * 3 + 1,
      items: [event(b * 3 + 1), event(b * 3 + 2), event(b * 3 + 3)],
    }));
    const shuffled = [...batches].sort(() => Math.random() - 0.5);
    await Promise.all(
      shuffled.map(async (b) => {
        await events.append(c, b.first, b.items);
        await new PushDelivery(connections, events, push).committed(c, await events.lastSeq(c));
      }),
    );
    for (const id of ['a', 'b', 'c']) expect(push.received.get(id), id).toEqual(range(1, 90));
    for (const conn of await connections.list(c)) expect(conn).toMatchObject({ sentSeq: 90, wantSeq: 90 });
  }, 60_000);

  it('never sends past a gap: a batch beyond a missing one waits until the gap is filled', async () => {
    const push = new FakePush();
    const c = conversation();
    await connect(push, c, 'x');
    const delivery = new PushDelivery(connections, events, push);
    await delivery.resend(c, 'x');
    await events.append(c, 1, [event(1), event(2)]);
    await delivery.committed(c, await events.lastSeq(c));
    await events.append(c, 5, [event(5)]); // 3 and 4 missing
    await delivery.committed(c, await events.lastSeq(c));
    expect(push.received.get('x')).toEqual([1, 2]);
    await events.append(c, 3, [event(3), event(4)]);
    await delivery.committed(c, await events.lastSeq(c));
    expect(push.received.get('x')).toEqual([1, 2, 3, 4, 5]);
  });

  it('sends nothing before the resend step opened the connection; then everything from its start position', async () => {
    const push = new FakePush();
    const c = conversation();
    await events.append(c, 1, [event(1), event(2), event(3)]);
    await connect(push, c, 'late', 1, false);
    const delivery = new PushDelivery(connections, events, push, { sleep: async () => void push.open.add('late') });
    await events.append(c, 4, [event(4)]);
    await delivery.committed(c, 4); // an ingest before the connection is open: it only raises wantSeq
    expect(push.received.get('late')).toBeUndefined();
    expect(await delivery.resend(c, 'late')).toBe('sent');
    expect(push.isOpenCalls).toBeGreaterThan(1); // it waited for API Gateway to open it
    expect(push.received.get('late')).toEqual([2, 3, 4]);
  });

  it('a connection that is gone (410) is removed; one that never opens is given up and removed', async () => {
    const push = new FakePush();
    const c = conversation();
    await connect(push, c, 'gone');
    const delivery = new PushDelivery(connections, events, push, { sleep: async () => {} });
    await delivery.resend(c, 'gone');
    push.open.delete('gone');
    await events.append(c, 1, [event(1)]);
    await delivery.committed(c, 1);
    expect(await connections.get(c, 'gone')).toBeUndefined();

    await connect(push, c, 'never', 0, false);
    let t = 0;
    const impatient = new PushDelivery(connections, events, push, {
      openWaitMs: 100,
      now: () => (t += 60),
      sleep: async () => {},
    });
    expect(await impatient.resend(c, 'never')).toBe('gone');
    expect(await connections.get(c, 'never')).toBeUndefined();
  });

  it('a holder whose lease expired stops at its next message; the new holder goes on from sentSeq', async () => {
    const push = new FakePush();
    const c = conversation();
    await connect(push, c, 'l');
    let now = 1_000;
    const clock = { now: () => now, sleep: async () => {} };
    await new PushDelivery(connections, events, push, clock).resend(c, 'l');
    await events.append(c, 1, range(1, 5).map(event));
    // A stalled holder: takes the lease, then its lease runs out before it sends.
    expect(await connections.want(c, 'l', 5)).toBeUndefined();
    expect(await connections.lease(c, 'l', 'stalled', now, now + 30_000)).toMatchObject({ sentSeq: 0, wantSeq: 5 });
    await new PushDelivery(connections, events, push, clock).committed(c, 5);
    expect(push.received.get('l')).toBeUndefined(); // the lease holds
    now += 31_000;
    await new PushDelivery(connections, events, push, clock).committed(c, 5);
    expect(push.received.get('l')).toEqual([1, 2, 3, 4, 5]);
    expect(await connections.advance(c, 'l', 'stalled', 0, 1, now + 30_000)).toBe(false);
  });

  it('a replay longer than one invocation stops within its time, releases the lease and continues itself from sentSeq: every event once, in order', async () => {
    const c = conversation();
    await events.append(c, 1, range(1, 250).map(event));
    // Each Lambda invocation has 30 "ms"; a message costs 1 (the fake clock moves only as it sends).
    const BUDGET = 30;
    let used = 0;
    const lowest: number[] = [];
    const push = new FakePush();
    const post = push.post.bind(push);
    let ingested = false;
    push.post = async (id, data) => {
      // What was left when it decided to send this one.
      lowest[lowest.length - 1] = Math.min(lowest.at(-1)!, BUDGET - used);
      used++;
      // An ingest while the replay holds the lease: it only raises wantSeq; the chain brings it too.
      if (used === 5 && !ingested) {
        ingested = true;
        await events.append(c, 251, range(251, 260).map(event));
        await new PushDelivery(connections, events, push).committed(c, 260);
      }
      return post(id, data);
    };
    await connect(push, c, 'long');
    const { stream, requests } = resendStep(push);
    // The resend function's invocations: $connect's request, then each continuation it asked for.
    let next: ResendRequest | undefined = { conversation: c, connectionId: 'long' };
    let invocations = 0;
    while (next) {
      invocations++;
      used = 0;
      lowest.push(BUDGET);
      const isOpenBefore = push.isOpenCalls;
      await stream.resend(next, () => BUDGET - used);
      if (next.resume) expect(push.isOpenCalls, 'a continuation skips the open-wait').toBe(isOpenBefore);
      // Released at the stop: anyone may take the lease at once (it would hold 30 s otherwise).
      const probe = await connections.lease(c, 'long', 'probe', Date.now(), Date.now() + 1000);
      if (probe) await connections.release(c, 'long', 'probe');
      expect(probe === undefined, 'lease free, or nothing left to send').toBe(true === (requests.length === 0));
      next = requests.shift();
      expect(requests).toEqual([]);
      if (next) expect(next).toEqual({ conversation: c, connectionId: 'long', resume: true });
    }
    expect(push.received.get('long')).toEqual(range(1, 260));
    expect(await connections.get(c, 'long')).toMatchObject({ sentSeq: 260, wantSeq: 260 });
    // 21 messages an invocation (while 30 down to 10 are left): it stops with a third of its time left (min(10 s, budget / 3)).
    expect(invocations).toBe(13);
    expect(Math.min(...lowest)).toBeGreaterThanOrEqual(BUDGET / 3);
  }, 60_000);

  it('an invocation that could send nothing within its time releases the lease and does not continue', async () => {
    const push = new FakePush();
    const c = conversation();
    await events.append(c, 1, range(1, 5).map(event));
    await connect(push, c, 'slow');
    const { stream, requests } = resendStep(push);
    // 30 s at the start, then (a slow first read) 5 s: under the margin before the first message.
    let calls = 0;
    await stream.resend({ conversation: c, connectionId: 'slow' }, () => (calls++ === 0 ? 30_000 : 5_000));
    expect(push.received.get('slow')).toBeUndefined();
    expect(requests).toEqual([]);
    // The lease is free: the next ingest (or resend without a budget) brings it all.
    await new PushDelivery(connections, events, push).committed(c, 5);
    expect(push.received.get('slow')).toEqual(range(1, 5));
  });
});
