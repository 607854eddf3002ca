import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationRef, EventStore } from '#shared/events/event-store.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import type { EventFeed } from '#shared/stream/feed.ts';
import { MAX_MESSAGE_BYTES } from '#shared/stream/messages.ts';
import { waitUntil } from '#test/helpers/wait.ts';

/** One client connected to a conversation through the adapter under test. */
export interface FeedClient {
  /** The messages received so far, parsed, in arrival order. */
  messages(): { seq: number; kind: string; id: string; [k: string]: unknown }[];
  disconnect(): Promise<void>;
}

export interface FeedFixture {
  feed: EventFeed;
  /** The store the adapter delivers from; the contract appends to it as the bridge route does. */
  store: EventStore;
  /** Connects a client after position `after` (`'end'`: the committed end at connection); resolves once delivery is in place. */
  connect(conversation: ConversationRef, after: number | 'end'): Promise<FeedClient>;
  close?(): Promise<void>;
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

/**
 * The EventFeed contract (the delivery rule of shared/stream/feed.ts), for every adapter: per
 * connection, events in sequence order, each exactly once, never past the committed end, whatever
 * the order, number and staleness of the notifications concurrent ingests send.
 */
export function eventFeedContract(name: string, setup: () => Promise<FeedFixture>): void {
  describe(`EventFeed contract: ${name}`, () => {
    let f: FeedFixture;
    beforeAll(async () => {
      f = await setup();
    }, 60_000);
    afterAll(async () => {
      await f?.close?.();
    });

    const fresh = (): ConversationRef => ({ userId: 'feed-user', conversationId: randomUUID().replaceAll('-', '') });
    const event = (n: number, extra: Record<string, unknown> = {}): AgentEventEnvelope => ({
      kind: 'MessageEvent',
      id: `ev-${n}`,
      timestamp: new Date().toISOString(),
      source: 'agent',
      ...extra,
    });
    /** As the bridge route does: append, read the committed end, tell the feed. */
    const ingest = async (c: ConversationRef, first: number, events: AgentEventEnvelope[]) => {
      await f.store.append(c, first, events);
      await f.feed.committed(c, await f.store.lastSeq(c));
    };
    const seqs = (client: FeedClient) => client.messages().map((m) => m.seq);

    it('delivers every event once, in order, with batches ingested concurrently out of order, and nothing past a gap until it is filled', async () => {
      const c = fresh();
      await ingest(c, 1, [event(1), event(2)]);
      const early = await f.connect(c, 0);
      const batches = range(0, 19).map((b) => ({
        first: 3 + b * 5,
        events: range(0, 4).map((k) => event(3 + b * 5 + k)),
      }));
      const [gap, ...rest] = batches as [(typeof batches)[0], ...typeof batches];
      await Promise.all(
        [...rest]
          .sort(() => Math.random() - 0.5)
          .map((b, i) => new Promise((r) => setTimeout(r, i % 5)).then(() => ingest(c, b.first, b.events))),
      );
      await waitUntil('the first two', () => seqs(early).length >= 2);
      await new Promise((r) => setTimeout(r, 200));
      expect(seqs(early), 'nothing past the gap').toEqual([1, 2]);
      const late = await f.connect(c, 0);
      await ingest(c, gap.first, gap.events);
      await f.feed.committed(c, 1); // stale: changes nothing
      await waitUntil('all 102', () => seqs(early).length >= 102 && seqs(late).length >= 102);
      await new Promise((r) => setTimeout(r, 100));
      expect(seqs(early)).toEqual(range(1, 102));
      expect(seqs(late)).toEqual(range(1, 102));
      expect(early.messages().map((m) => m.id)).toEqual(range(1, 102).map((n) => `ev-${n}`));
      // A retried batch changes nothing and sends nothing again.
      await ingest(c, gap.first, gap.events);
      await ingest(c, 103, [event(103)]);
      await waitUntil('the 103rd', () => seqs(early).length >= 103);
      expect(seqs(early)).toEqual(range(1, 103));
      await early.disconnect();
      await late.disconnect();
    }, 60_000);

    it('resumes after a position with no gap and no duplicate; from the end sends only what comes next', async () => {
      const c = fresh();
      await ingest(
        c,
        1,
        range(1, 5).map((n) => event(n)),
      );
      const resumed = await f.connect(c, 3);
      const fromEnd = await f.connect(c, 'end');
      await ingest(c, 6, [event(6)]);
      await waitUntil('resume', () => seqs(resumed).length >= 3 && seqs(fromEnd).length >= 1);
      expect(seqs(resumed)).toEqual([4, 5, 6]);
      expect(seqs(fromEnd)).toEqual([6]);
      await resumed.disconnect();
      await fromEnd.disconnect();
    });

    it('sends large events, and events the agent called EventReference, as references to the events route', async () => {
      const c = fresh();
      const client = await f.connect(c, 0);
      await ingest(c, 1, [
        event(1, { text: 'x'.repeat(MAX_MESSAGE_BYTES) }),
        event(2, { kind: 'EventReference', href: 'https://evil.example/' }),
        event(3),
      ]);
      await waitUntil('three', () => seqs(client).length >= 3);
      const [big, spoof, small] = client.messages();
      expect(big).toMatchObject({
        kind: 'EventReference',
        seq: 1,
        id: 'ev-1',
        href: `/api/v1/events/search?conversation_id__eq=${c.conversationId}&after_seq=0&limit=1`,
      });
      expect(spoof).toMatchObject({
        kind: 'EventReference',
        seq: 2,
        event_kind: 'EventReference',
        href: `/api/v1/events/search?conversation_id__eq=${c.conversationId}&after_seq=1&limit=1`,
      });
      expect(small).toMatchObject({ kind: 'MessageEvent', seq: 3 });
      await client.disconnect();
    });

    it('sends nothing more to a client that left, and keeps delivering to the others', async () => {
      const c = fresh();
      const leaving = await f.connect(c, 0);
      const staying = await f.connect(c, 0);
      await ingest(c, 1, [event(1)]);
      await waitUntil('first', () => seqs(leaving).length >= 1 && seqs(staying).length >= 1);
      await leaving.disconnect();
      await ingest(c, 2, [event(2)]);
      await waitUntil('second', () => seqs(staying).length >= 2);
      expect(seqs(leaving)).toEqual([1]);
      await staying.disconnect();
    });
  });
}
