import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { fillPath } from '#shared/protocol.ts';
import { keepAliveClient } from './http.ts';
import { benchEvents } from './ingest-client.ts';

/**
 * The noisy-neighbour benchmark's clients, each run in a child process of its own (bench/neighbours.ts)
 * so neither the victim's nor the flood's CPU is the server's. Lines on stdout: `started` once the
 * flood is at full strength, then one JSON line with what it did; a flood runs until SIGTERM.
 */
export type NeighbourPlan =
  | { role: 'victim'; url: string; key: string; requests: number }
  | { role: 'sockets'; url: string; key: string; conversationId: string; sockets: number }
  | { role: 'replays'; url: string; key: string; conversationId: string; sockets: number }
  | { role: 'events'; url: string; sandboxes: { id: string; key: string; conversationId: string }[] };

const wsUrl = (url: string, cid: string, query = '') =>
  `${url.replace(/^http/, 'ws')}/sockets/events/${cid}${query ? `?${query}` : ''}`;

/** `GET /api/settings` one after another on a keep-alive connection: each request's milliseconds. */
async function victim(plan: Extract<NeighbourPlan, { role: 'victim' }>) {
  const http = keepAliveClient(plan.url);
  const headers = { 'x-session-api-key': plan.key };
  const latencies: number[] = [];
  let errors = 0;
  for (let i = 0; i < plan.requests + 50; i++) {
    const t = performance.now();
    const status = await http.send('GET', '/api/settings', headers);
    if (i >= 50) latencies.push(performance.now() - t);
    if (status !== 200) errors++;
  }
  http.close();
  return { latencies, errors };
}

/**
 * Keeps `sockets` stream sockets of one user open or opening: each one that closes (the cap refuses
 * all but a few) is opened again at once, as a hostile client in a loop would.
 */
function socketFlood(plan: Extract<NeighbourPlan, { role: 'sockets' | 'replays' }>, stop: Promise<void>) {
  const counts = { opened: 0, refused: 0, limited: 0, messages: 0, replays: 0 };
  let stopping = false;
  const query = plan.role === 'replays' ? 'resend_all=true' : '';
  const open = () => {
    if (stopping) return;
    const ws = new WebSocket(wsUrl(plan.url, plan.conversationId, query), {
      headers: { 'x-session-api-key': plan.key },
    });
    let received = 0;
    ws.on('open', () => counts.opened++);
    ws.on('message', () => {
      counts.messages++;
      // A replay that has sent everything is started again: the flood is replays without end.
      if (plan.role === 'replays' && ++received === REPLAY_EVENTS) {
        counts.replays++;
        ws.close();
      }
    });
    // Over the request rate the upgrade itself is answered 429 (no socket): refused too, and opened again at once.
    ws.on('unexpected-response', (_req, res) => {
      if (res.statusCode === 429) counts.limited++;
      ws.terminate(); // while connecting: aborts the handshake and closes (which opens again)
    });
    ws.on('error', () => undefined);
    ws.on('close', (code) => {
      if (code === 4429) counts.refused++;
      setTimeout(open, 5);
    });
    void stop.then(() => ws.terminate());
  };
  for (let i = 0; i < plan.sockets; i++) open();
  return stop.then(() => {
    stopping = true;
    return counts;
  });
}

/** Each sandbox posts batches of 100 events as fast as the plan lets it (waiting out each 429's Retry-After). */
async function eventFlood(plan: Extract<NeighbourPlan, { role: 'events' }>, stop: Promise<void>) {
  let stopping = false;
  void stop.then(() => {
    stopping = true;
  });
  const counts = { accepted: 0, refused: 0 };
  await Promise.all(
    plan.sandboxes.map(async (s) => {
      const http = keepAliveClient(plan.url);
      const path = fillPath('events', { sandbox_id: s.id, conversation_id: s.conversationId });
      const headers = { 'x-session-api-key': s.key, 'content-type': 'application/json' };
      let next = 1;
      while (!stopping) {
        const status = await http.send(
          'POST',
          `${path}?first_seq=${next}`,
          headers,
          JSON.stringify(benchEvents(s.id, next, 100)),
        );
        if (status === 200) {
          next += 100;
          counts.accepted += 100;
        } else {
          counts.refused++;
          await new Promise((r) => setTimeout(r, status === 429 ? 1000 : 100));
        }
      }
      http.close();
    }),
  );
  return counts;
}

/** Events in the replayed conversation: bench/neighbours.ts writes exactly these. */
export const REPLAY_EVENTS = 20_000;

// As the child: the plan in argv.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const plan = JSON.parse(process.argv[2]!) as NeighbourPlan;
  const stop = new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  let result: unknown;
  if (plan.role === 'victim') result = await victim(plan);
  else {
    const running = plan.role === 'events' ? eventFlood(plan, stop) : socketFlood(plan, stop);
    // Full strength: the sockets have had their first round, the posters their first batches.
    await new Promise((r) => setTimeout(r, 2000));
    process.stdout.write('started\n');
    result = await running;
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
