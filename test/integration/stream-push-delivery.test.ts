import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTables, startDynalite, useLocalTables, type EmbeddedDynamo } from '#infra/local/dynamo.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import type { ConversationRef } from '#shared/events/event-store.ts';
import type { ConnectionPush } from '#shared/stream/connection-push.ts';
import { DynamoConnectionStore } from '#shared/stream/dynamo-connection-store.ts';
import { PushDelivery } from '#shared/stream/push-delivery.ts';

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
});
