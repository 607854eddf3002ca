import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import { startAgentStack } from '#test/helpers/agent-stack.ts';
import { ROOMY_PLANS } from '#test/helpers/stack.ts';
import { eventsUrl, openStream, type StreamClient } from '#test/helpers/stream-client.ts';
import { untilReady } from './conversations.ts';
import { benchEvents } from './ingest-client.ts';
import { json } from './http.ts';
import { count, ms, p50p99, percentile } from './stats.ts';

const SAMPLES = 200;
const FANOUT_CLIENTS = 10;
const FANOUT_SAMPLES = 50;
const BATCH = 100;
const BATCHES = 20;
const HISTORY = 2000;

/**
 * `npm run bench -- stream`: time from an event's ingest (the events POST a sandbox makes on the bridge, sent at
 * t0) to its arrival on clients connected to `/sockets/events/{id}`, on the local stack.
 */
export async function benchStream(): Promise<string> {
  // The roomy test plans, with room for the fan-out's sockets on one conversation (the built-in cap is 5).
  const dir = mkdtempSync(join(tmpdir(), 'bench-stream-'));
  const plansFile = join(dir, 'plans.json');
  const roomy = JSON.parse(readFileSync(ROOMY_PLANS, 'utf8'));
  Object.assign(roomy.plans[roomy.default_plan], { max_stream_sockets_per_conversation: FANOUT_CLIENTS + 5 });
  writeFileSync(plansFile, JSON.stringify(roomy));
  const { stack, stop } = await startAgentStack({ stack: { sweepIntervalMs: 3_600_000, plansFile } });
  const clients: StreamClient[] = [];
  try {
    // A conversation with a sandbox and no message: the agent posts nothing, the benchmark numbers every event.
    const started = await json(stack, 'POST', '/api/v1/app-conversations', { body: {} });
    const task = await untilReady(stack, started.id);
    const cid: string = task.app_conversation_id;
    const sid: string = task.sandbox_id;
    const key = (await stack.sandboxKey(sid))!;
    const [view] = await json(stack, 'GET', `/api/v1/app-conversations?ids=${cid}`);
    let seq: number = await json(stack, 'GET', `/api/v1/events/count?conversation_id__eq=${cid}`);
    const post = (events: AgentEventEnvelope[]) => {
      const first = seq + 1;
      seq += events.length;
      return json(stack, 'POST', `/api/v1/webhooks/${sid}/events/${cid}?first_seq=${first}`, { key, body: events });
    };
    const connect = async (query: Record<string, string>) => {
      const c = openStream(eventsUrl(stack.url, cid, { session_api_key: view.session_api_key, ...query }));
      clients.push(c);
      await c.opened;
      return c;
    };

    /** Events of about half a kilobyte, like the ingest benchmark's, numbered from what is stored. */
    const event = (tag: string, n: number) => benchEvents(tag, n, 1)[0]!;

    // 1. One client, one event at a time.
    const one = await connect({});
    const single: number[] = [];
    const answered: number[] = [];
    for (let i = 0; i < SAMPLES + 20; i++) {
      const t = performance.now();
      await post([event('single', i)]);
      const answer = performance.now() - t;
      await one.until(seq);
      if (i >= 20) {
        single.push(one.arrivals.at(-1)! - t);
        answered.push(answer);
      }
    }
    await one.close();

    // 2. Fan-out: the same event to every connected client.
    const many = await Promise.all(Array.from({ length: FANOUT_CLIENTS }, () => connect({})));
    const fanFirst: number[] = [];
    const fanLast: number[] = [];
    for (let i = 0; i < FANOUT_SAMPLES + 5; i++) {
      const t = performance.now();
      await post([event('fan', i)]);
      await Promise.all(many.map((c) => c.until(seq)));
      const times = many.map((c) => c.arrivals.at(-1)! - t);
      if (i >= 5) {
        fanFirst.push(Math.min(...times));
        fanLast.push(Math.max(...times));
      }
    }
    await Promise.all(many.map((c) => c.close()));

    // 3. Batches of 100: to the last event of each batch.
    const batcher = await connect({});
    const batchLast: number[] = [];
    for (let i = 0; i < BATCHES; i++) {
      const t = performance.now();
      await post(Array.from({ length: BATCH }, (_, k) => event(`batch${i}`, k)));
      await batcher.until(seq);
      batchLast.push(batcher.arrivals.at(-1)! - t);
    }
    await batcher.close();

    // 4. resend_all of a long history: from the connection's open to the last stored event.
    while (seq < HISTORY)
      await post(Array.from({ length: Math.min(BATCH, HISTORY - seq) }, (_, k) => event('history', seq + k)));
    const t = performance.now();
    const replay = openStream(eventsUrl(stack.url, cid, { session_api_key: view.session_api_key, resend_all: 'true' }));
    clients.push(replay);
    await replay.until(seq, 120_000);
    const replayMs = performance.now() - t;
    if (replay.messages.length !== seq) throw new Error(`resend_all sent ${replay.messages.length} of ${seq}`);
    await replay.close();

    return [
      "## Event stream (local: the gateway's WebSocket)",
      '',
      `From the moment a sandbox's events POST on the bridge is sent (\`POST /api/v1/webhooks/{sandbox_id}/events/{conversation_id}\`, over HTTP to the local gateway with the sandbox's key) to the event's arrival as a message on a client connected to \`/sockets/events/{conversation_id}\` (package \`ws\`, in the same process, over loopback). The bridge route appends and tells the in-memory hub the committed end the append returned; each connection's pump reads the new events from dynalite and sends them. Events of about ${count(Buffer.byteLength(JSON.stringify(event('x', 0))))} bytes. On AWS the same path is a PostToConnection per event and connection from the ingest Lambda (not measured here).`,
      '',
      '| what | samples | p50 / p99 |',
      '|---|---|---|',
      `| 1 event, 1 client | ${SAMPLES} | ${p50p99(single)} |`,
      `| (the same POSTs: until the bridge route answered, for comparison) | ${SAMPLES} | ${p50p99(answered)} |`,
      `| 1 event, ${FANOUT_CLIENTS} clients: the first to receive it | ${FANOUT_SAMPLES} | ${p50p99(fanFirst)} |`,
      `| 1 event, ${FANOUT_CLIENTS} clients: the last to receive it | ${FANOUT_SAMPLES} | ${p50p99(fanLast)} |`,
      `| a batch of ${BATCH} events, 1 client: its last event | ${BATCHES} | ${p50p99(batchLast)} |`,
      '',
      `\`resend_all=true\` on ${count(seq)} stored events: the last one arrived ${ms(replayMs, 0)} after the connection was asked for (${count(seq / (replayMs / 1000))} events/s, pages of 100 read from the store). Single-event p99 / p50: ${(percentile(single, 99) / percentile(single, 50)).toFixed(1)}x.`,
      '',
    ].join('\n');
  } finally {
    for (const c of clients) c.ws.terminate();
    await stop();
  }
}
