import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EventSink } from '#sandbox/agent/event-sink.ts';
import { BridgeClient } from '#sandbox/bridge-client.ts';
import { waitUntil } from '#test/helpers/wait.ts';
import { agentEventBatchSchema, EventFactory, type AgentEvent } from '#sandbox/agent/events.ts';

/** A stand-in for the events bridge route on loopback: answers with the statuses given (then 200), keeps the first event at each number. */
async function receiver(statuses: number[] = []) {
  const posts: { headers: Record<string, string | string[] | undefined>; events: AgentEvent[]; firstSeq: number }[] =
    [];
  const stored = new Map<number, AgentEvent>();
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.url!.endsWith('/bridge/check-in')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          sandbox_id: 'sb1',
          session_api_key: 'sandbox-key',
          heartbeat_seconds: 30,
          poll_wait_seconds: 20,
        }),
      );
      return;
    }
    expect(req.url!.split('?')[0]).toBe('/api/v1/webhooks/sb1/events/c1');
    const events = agentEventBatchSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    const firstSeq = Number(new URL(req.url!, 'http://x').searchParams.get('first_seq'));
    posts.push({ headers: req.headers, events, firstSeq });
    const status = statuses.shift() ?? 200;
    if (status === 200)
      for (const [i, e] of events.entries()) if (!stored.has(firstSeq + i)) stored.set(firstSeq + i, e);
    res
      .writeHead(status, { 'content-type': 'application/json' })
      .end(JSON.stringify(status === 200 ? { success: true } : { detail: 'nope' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // The sandbox's own client of the control plane, checked in: what the runner gives its sinks.
  const client = new BridgeClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'sb1');
  await client.checkIn('enr_x', { version: 'test' });
  return {
    deliver: (firstSeq: number, batch: AgentEvent[], timeoutMs: number) =>
      client.postEvents('c1', firstSeq, batch, timeoutMs),
    posts,
    /** In number order; throws on a gap (a reader would stop there for good). */
    stored: () => {
      const seqs = [...stored.keys()].sort((a, b) => a - b);
      for (const [i, seq] of seqs.entries()) expect(seq, 'numbers without a gap').toBe(seqs[0]! + i);
      return seqs.map((seq) => stored.get(seq)!);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const factory = new EventFactory();
const events = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    factory.make('ConversationStateUpdateEvent', 'environment', { key: 'n', value: i }),
  );

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

describe('EventSink', () => {
  it('posts full batches of 10 at once, with the key header, in order', async () => {
    const rx = await receiver();
    cleanups.push(rx.close);
    // A long interval: only the batch size can trigger these posts.
    const sink = new EventSink({ deliver: rx.deliver, flushIntervalMs: 60_000 });
    const sent = events(25);
    await sink.push(sent.slice(0, 12));
    await sink.push(sent.slice(12));
    await waitUntil('two full batches', () => sink.pending === 5);
    expect(rx.posts.map((p) => p.events.length)).toEqual([10, 10]);
    await sink.close();
    expect(rx.posts.map((p) => p.events.length)).toEqual([10, 10, 5]);
    expect(rx.posts.flatMap((p) => p.events.map((e) => e.id))).toEqual(sent.map((e) => e.id));
    expect(rx.posts[0]!.headers['x-session-api-key']).toBe('sandbox-key');
    expect(() => sink.push(events(1))).toThrow(/closed/);
  });

  it('posts a partial batch after the flush interval', async () => {
    const rx = await receiver();
    cleanups.push(rx.close);
    const sink = new EventSink({ deliver: rx.deliver, flushIntervalMs: 50 });
    await sink.push(events(3));
    await waitUntil('the timed flush', () => rx.posts.length === 1);
    expect(rx.posts[0]!.events).toHaveLength(3);
    await sink.close();
  });

  it('numbers events contiguously from firstSeq, repeats the numbers on a retry and reports the next one', async () => {
    const rx = await receiver([503]);
    cleanups.push(rx.close);
    const delivered: number[] = [];
    const sink = new EventSink({
      deliver: rx.deliver,
      backoffMs: 5,
      flushIntervalMs: 60_000,
      firstSeq: 41,
      onDelivered: (n) => delivered.push(n),
    });
    await sink.push(events(13));
    await sink.flush();
    expect(rx.posts.map((p) => [p.firstSeq, p.events.length])).toEqual([
      [41, 10],
      [41, 10],
      [51, 3],
    ]);
    expect(delivered).toEqual([51, 54]);
    await sink.close();
  });

  it('gives the numbers of a refused batch (nothing stored) to the events after it, so no gap is left', async () => {
    const rx = await receiver([422]);
    cleanups.push(rx.close);
    const sink = new EventSink({ deliver: rx.deliver, flushIntervalMs: 60_000, onError: () => undefined });
    await sink.push(events(10));
    await sink.flush();
    const after = events(4);
    await sink.push(after);
    await sink.flush();
    expect(rx.posts.map((p) => p.firstSeq)).toEqual([1, 1]);
    expect(rx.stored().map((e) => e.id)).toEqual(after.map((e) => e.id));
    await sink.close();
  });

  it('drops only events never sent when its buffer overflows: the numbers stay contiguous', async () => {
    // The full batch goes at once and again at the flush: 3 tries each, all failing.
    const rx = await receiver(Array.from({ length: 6 }, () => 500));
    cleanups.push(rx.close);
    const sink = new EventSink({
      deliver: rx.deliver,
      backoffMs: 1,
      flushIntervalMs: 60_000,
      maxBuffered: 12,
      onError: () => undefined,
    });
    const first = events(10);
    await sink.push(first);
    await sink.flush(); // these 10 are numbered 1-10 now and may have landed
    const later = events(6);
    await sink.push(later); // 16 > 12: four of the unsent go
    expect(sink.pending).toBe(12);
    await sink.flush();
    expect(rx.stored().map((e) => e.id)).toEqual([...first, ...later.slice(4)].map((e) => e.id));
    await sink.close();
  });

  it('retries a failed post with back-off; a retried batch is stored once (same numbers)', async () => {
    const rx = await receiver([503, 500]);
    cleanups.push(rx.close);
    const sink = new EventSink({ deliver: rx.deliver, backoffMs: 5 });
    const sent = events(4);
    await sink.push(sent);
    await sink.flush();
    expect(rx.posts).toHaveLength(3);
    expect(rx.stored().map((e) => e.id)).toEqual(sent.map((e) => e.id));
    expect(sink.pending).toBe(0);
    await sink.close();
  });

  it('keeps a batch it could not deliver after 3 tries and sends it, in order, once the receiver is back', async () => {
    const rx = await receiver([500, 500, 500]);
    cleanups.push(rx.close);
    const errors: string[] = [];
    const sink = new EventSink({
      deliver: rx.deliver,
      backoffMs: 5,
      flushIntervalMs: 30,
      onError: (m) => errors.push(m),
    });
    const sent = events(3);
    await sink.push(sent);
    await sink.flush();
    expect(rx.posts).toHaveLength(3);
    expect(sink.pending).toBe(3);
    expect(errors[0]).toMatch(/could not be delivered yet: POST events: HTTP 500/);
    const more = events(2);
    await sink.push(more);
    await waitUntil('the retry at the next flush', () => sink.pending === 0);
    expect(rx.stored().map((e) => e.id)).toEqual([...sent, ...more].map((e) => e.id));
    await sink.close();
  });

  it('drops a batch the receiver refuses (401) instead of retrying it forever', async () => {
    const rx = await receiver([401]);
    cleanups.push(rx.close);
    const errors: string[] = [];
    const sink = new EventSink({ deliver: rx.deliver, backoffMs: 5, onError: (m) => errors.push(m) });
    await sink.push(events(2));
    await sink.flush();
    expect(rx.posts).toHaveLength(1);
    expect(sink.pending).toBe(0);
    expect(errors).toEqual([expect.stringMatching(/2 events were refused and dropped: POST events: HTTP 401/)]);
    await sink.close();
  });

  it('survives a receiver that is not listening, within its buffer limit', async () => {
    const rx = await receiver();
    await rx.close();
    const errors: string[] = [];
    const sink = new EventSink({
      deliver: rx.deliver,
      backoffMs: 1,
      flushIntervalMs: 60_000,
      maxBuffered: 15,
      onError: (m) => errors.push(m),
    });
    await sink.push(events(10));
    await sink.flush();
    await sink.push(events(10));
    await sink.flush();
    expect(sink.pending).toBe(15);
    expect(errors.some((m) => /5 events were dropped/.test(m))).toBe(true);
    expect(errors.some((m) => /could not be delivered yet/.test(m))).toBe(true);
  });
});
