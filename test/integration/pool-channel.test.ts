import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import type { PoolWaitResponse } from '#shared/protocol.ts';
import type { PoolClient } from '#sandbox/bridge-client.ts';
import { PoolChannel, type PoolChannelOptions } from '#sandbox/pool-channel.ts';

/*
 * A standby's wait for its binding (sandbox/pool-channel.ts) against a WebSocket server on loopback and a
 * wait route in memory: on the socket it calls `wait=0` at once, when woken and as its heartbeat, one
 * call at a time; refused, it long-polls. The AWS path (API Gateway's socket, the claim's PostToConnection)
 * runs in test/tier/warm-pool.test.ts.
 */
const BINDING: PoolWaitResponse = {
  binding: { sandbox_id: 's1', generation: 1, enrollment_sealed: 'x' },
  stop: false,
} as PoolWaitResponse;

let server: WebSocketServer | undefined;
afterEach(() => server?.close());

/** A socket server: `refuse` answers the upgrade 401; `sockets` are the accepted connections. */
async function socketServer(refuse = false) {
  const sockets: WebSocket[] = [];
  const upgrades: { url: string; key: string }[] = [];
  server = new WebSocketServer({
    port: 0,
    host: '127.0.0.1',
    verifyClient: (_info, done) => (refuse ? done(false, 401) : done(true)),
  });
  server.on('connection', (ws, req) => {
    sockets.push(ws);
    upgrades.push({ url: req.url ?? '', key: String(req.headers['x-session-api-key']) });
  });
  await once(server, 'listening');
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/bridge`, sockets, upgrades };
}

/** A wait route: records each call's `wait`, answers from `answer` (nothing by default). */
function waitRoute() {
  const calls: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const state = { answer: { binding: null, stop: false } as PoolWaitResponse, delayMs: 0 };
  const client = {
    async wait(seconds: number) {
      calls.push(seconds);
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, seconds > 0 ? Math.min(seconds * 1000, 50) : state.delayMs));
      inFlight--;
      return state.answer;
    },
    socketTarget(url: string) {
      const u = new URL(url);
      u.searchParams.set('standby_id', 'sb_1');
      return { url: u.href, headers: { 'x-session-api-key': 'pool_secret' } };
    },
  };
  return { calls, state, client: client as unknown as PoolClient, maxInFlight: () => maxInFlight };
}

const quiet = () => undefined;

/** A channel on `route`, waiting 10 s a call, quiet, never stopped unless `options` give a signal. */
const channelOn = (route: ReturnType<typeof waitRoute>, options: Partial<PoolChannelOptions> = {}) =>
  new PoolChannel({
    pool: route.client,
    waitSeconds: 10,
    signal: new AbortController().signal,
    log: quiet,
    ...options,
  });

describe('PoolChannel (a standby waiting for its binding)', () => {
  it('on the socket: wait=0 at once, then only when woken or at its heartbeat; the credential in a header, never the URL', async () => {
    const { url, sockets, upgrades } = await socketServer();
    const route = waitRoute();
    const channel = channelOn(route, { socketUrl: url, heartbeatMs: 60_000 });
    const done = channel.run();
    await expect.poll(() => route.calls.length).toBe(1);
    expect(route.calls).toEqual([0]);
    const [ws] = sockets;
    expect(upgrades).toEqual([{ url: '/bridge?standby_id=sb_1', key: 'pool_secret' }]);
    // A pong is no wake-up; the claim's {"fetch":true} is.
    ws!.send('{"pong":true}');
    await new Promise((r) => setTimeout(r, 50));
    expect(route.calls).toEqual([0]);
    route.state.answer = BINDING;
    ws!.send('{"fetch":true}');
    expect(await done).toEqual(BINDING);
    expect(route.calls).toEqual([0, 0]);
    // Bound: the pool socket is closed.
    await expect.poll(() => ws!.readyState).toBe(ws!.CLOSED);
  });

  it('the heartbeat is a wait=0 call on its interval; wake-ups during a call make one more call, never two at once', async () => {
    const { url, sockets } = await socketServer();
    const route = waitRoute();
    route.state.delayMs = 100;
    const stopper = new AbortController();
    const done = channelOn(route, { socketUrl: url, signal: stopper.signal, heartbeatMs: 150 }).run();
    await expect.poll(() => sockets.length).toBe(1);
    for (let i = 0; i < 5; i++) sockets[0]!.send('{"fetch":true}');
    await expect.poll(() => route.calls.length, { timeout: 2_000 }).toBeGreaterThanOrEqual(4);
    expect(route.maxInFlight()).toBe(1);
    expect(route.calls.every((w) => w === 0)).toBe(true);
    stopper.abort();
    expect(await done).toBeNull();
  });

  it('a refused socket: it long-polls meanwhile (wait=N), and a stop ends standing by', async () => {
    const { url } = await socketServer(true);
    const route = waitRoute();
    const channel = channelOn(route, { socketUrl: url, retryMs: 2_000 });
    const done = channel.run();
    await expect.poll(() => route.calls.some((w) => w > 0)).toBe(true);
    route.state.answer = { binding: null, stop: true } as PoolWaitResponse;
    expect(await done).toEqual({ binding: null, stop: true });
  });

  it('without a socket URL (locally) it long-polls only', async () => {
    const route = waitRoute();
    route.state.answer = BINDING;
    const out = await channelOn(route, { waitSeconds: 7 }).run();
    expect(out).toEqual(BINDING);
    expect(route.calls).toEqual([7]);
  });
});
