/**
 * Commands over the bridge socket: the program's side (sandbox/command-channel.ts) against an
 * emulation of API Gateway's WebSocket API on loopback (test/helpers/bridge-socket.ts), whose
 * `$connect` runs the real entry (functions/bridge/socket-connect.ts) and whose management endpoint
 * the real pusher (ApiGatewayCommandPush, the AWS SDK) posts to; the HTTP side is the real local
 * stack (dynalite, the gateway, the bridge routes).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { handler as connectHandler } from '../../functions/bridge/socket-connect.ts';
import { BridgeClient, type BridgeCommand } from '#sandbox/bridge-client.ts';
import { CommandChannel, type CommandChannelOptions } from '#sandbox/command-channel.ts';
import { ApiGatewayCommandPush } from '#shared/sandboxes/apigateway-command-push.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { BridgeSocketEmulator } from '#test/helpers/bridge-socket.ts';
import { processEnv, sandboxPids, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

// The SDK signs its @connections calls; the emulator checks that a signature is there.
process.env.AWS_ACCESS_KEY_ID ??= 'AKIDTESTBRIDGESOCKET';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test-secret';

let stack: TestStack;
let socket: BridgeSocketEmulator;
const store = () => new DynamoSandboxStore();

beforeAll(async () => {
  socket = await new BridgeSocketEmulator((event) => connectHandler(event as never)).start();
  const dir = mkdtempSync(join(tmpdir(), 'acs-socket-specs-'));
  const specsFile = join(dir, 'specs.json');
  const spec = (id: string, command: string[], env: Record<string, string>) => ({
    id,
    command,
    created_at: '2025-11-01T00:00:00Z',
    initial_env: env,
    working_dir: '{data_dir}/sandboxes/{sandbox_id}/workspace',
  });
  writeFileSync(
    specsFile,
    JSON.stringify([
      // The test checks in itself (with the token from the process's environment) and runs the channel in-process.
      spec('idle', ['node', '-e', 'setInterval(() => {}, 60000)'], {}),
      spec('program', ['node', '{sandbox_program}'], { BRIDGE_SOCKET_URL: socket.url }),
    ]),
  );
  stack = await startTestStack({
    specsFile,
    containment: 'none',
    commandPush: new ApiGatewayCommandPush(socket.endpoint),
    // A long-poll that would only notice a command after a minute: what arrives sooner came by push.
    sandboxes: { pollMaxSeconds: 60, pollIntervalMs: 120_000, maxRunning: 20 },
  });
}, 120_000);

// A test that made the emulated API refuse or go silent leaves it answering again.
afterEach(() => {
  socket.refuseWith = undefined;
  socket.answerPings = true;
});

afterAll(async () => {
  await stack?.stop();
  await socket?.close();
});

/** A RUNNING sandbox whose session key the test holds (its process only idles). */
async function checkedIn(): Promise<{ id: string; bridge: BridgeClient; key: string }> {
  const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=idle');
  expect(res.status).toBe(200);
  const id: string = res.body.id;
  const token = await waitFor('the enrollment token', () => {
    const [pid] = sandboxPids(id);
    return pid ? processEnv(pid)?.ENROLLMENT_TOKEN : undefined;
  });
  const bridge = new BridgeClient(stack.url, id);
  const out = await bridge.checkIn(token, { version: 'test', capabilities: [] });
  return { id, bridge, key: out.session_api_key };
}

interface Running {
  channel: CommandChannel;
  handled: BridgeCommand[];
  /** The `wait` of every HTTP fetch of the queue the channel made. */
  fetches: number[];
  stop(): Promise<void>;
}

/** The channel as the program runs it: each command handled, then acknowledged over HTTP. */
function runChannel(bridge: BridgeClient, options: Partial<CommandChannelOptions> = {}): Running {
  const stopper = new AbortController();
  const handled: BridgeCommand[] = [];
  const fetches: number[] = [];
  const commands = bridge.commands.bind(bridge);
  bridge.commands = (wait: number) => {
    fetches.push(wait);
    return commands(wait);
  };
  const channel = new CommandChannel({
    bridge,
    socketUrl: socket.url,
    waitSeconds: 60,
    signal: stopper.signal,
    log: () => {},
    pingMs: 150,
    pongTimeoutMs: 2000,
    retryMs: 200,
    maxRetryMs: 400,
    minSessionMs: 0,
    ...options,
  });
  const done = channel.run(async (c) => {
    handled.push(c);
    await bridge.ack(c.seq);
  });
  return {
    channel,
    handled,
    fetches,
    stop: async () => {
      stopper.abort();
      await done;
    },
  };
}

/** Runs the channel for `body`, and stops it afterwards whatever the outcome. */
async function withChannel(
  bridge: BridgeClient,
  ...args:
    | [body: (run: Running) => Promise<void>]
    | [options: Partial<CommandChannelOptions>, body: (run: Running) => Promise<void>]
): Promise<void> {
  const [options, body] = args.length === 1 ? [{}, args[0]] : args;
  const run = runChannel(bridge, options);
  try {
    await body(run);
  } finally {
    await run.stop();
  }
}

const arrived = (run: Running, seq: number) =>
  waitFor(`command ${seq}`, () => (run.handled.some((c) => c.seq === seq) ? true : undefined));
const enqueue = (id: string, type: string, payload: unknown = {}) =>
  stack.services.sandboxes.enqueueCommand('dev', id, { type, payload });
const socketOf = async (id: string) => (await store().get(id))?.commandSocket;
const seqs = (handled: BridgeCommand[]) => handled.map((c) => c.seq);
/** The pushes of commands of one type (types are unique per test; seqs are per sandbox). */
const postsOf = (type: string) => socket.posts.filter((p) => p.text.includes(`"type":"${type}"`));

describe('the program on the bridge socket', () => {
  it('takes what was queued before it connected (one HTTP fetch), then pushed commands, each once, with no long-poll', async () => {
    const { id, bridge } = await checkedIn();
    const early = await enqueue(id, 'early');
    await withChannel(bridge, async (run) => {
      const connection = await waitFor('the connection on the record', () => socketOf(id));
      expect(socket.connections.has(connection)).toBe(true);
      await waitFor('the early command', () => (run.handled.length ? true : undefined));
      const pushed = await enqueue(id, 'pushed', { text: 'hello' });
      await arrived(run, pushed);
      expect(
        socket.posts
          .filter((p) => p.connectionId === connection)
          .map((p) => [JSON.parse(p.text).commands[0].seq, p.status]),
      ).toEqual([[pushed, 200]]);
      expect(run.handled.find((c) => c.seq === pushed)).toMatchObject({ type: 'pushed', payload: { text: 'hello' } });
      expect(seqs(run.handled)).toEqual([early, pushed]);
      // Every fetch was the no-wait one after connecting: no long-poll held a function.
      expect(run.fetches.every((w) => w === 0)).toBe(true);
      await waitFor('the queue to empty (acknowledged)', async () =>
        (await store().listCommands(id, 10)).length === 0 ? true : undefined,
      );
    });
  });

  it('pings within the idle limit; a socket that stops answering is dropped and replaced', async () => {
    const { id, bridge } = await checkedIn();
    await withChannel(bridge, async (run) => {
      const first = await waitFor('a connection', () => socketOf(id));
      await waitFor('two pings on it', () =>
        socket.received.filter((m) => m.connectionId === first).length >= 2 ? true : undefined,
      );
      expect(socket.received.find((m) => m.connectionId === first)?.text).toBe('{"action":"ping"}');
      socket.answerPings = false;
      const second = await waitFor('a new connection', async () => {
        const now = await socketOf(id);
        return now && now !== first ? now : undefined;
      });
      socket.answerPings = true;
      await waitFor('the silent connection to be gone', () => (socket.connections.has(first) ? undefined : true));
      const seq = await enqueue(id, 'after_reconnect');
      await arrived(run, seq);
      expect(postsOf('after_reconnect')[0]).toMatchObject({ connectionId: second, status: 200 });
    });
  });

  it('after a dropped connection, fetches what was queued while it was gone; a push to the gone connection is forgotten', async () => {
    const { id, bridge } = await checkedIn();
    await withChannel(bridge, async (run) => {
      const first = await waitFor('a connection', () => socketOf(id));
      // API Gateway ends the connection (its 2-hour limit, a network drop) and refuses new ones for now.
      socket.refuseWith = 503;
      socket.drop(first);
      await waitFor('the program to notice', () => (run.channel.connected ? undefined : true));
      const lost = await enqueue(id, 'while_disconnected');
      expect(postsOf('while_disconnected')[0]).toMatchObject({ connectionId: first, status: 410 });
      expect(await socketOf(id)).toBeUndefined();
      // Meanwhile it long-polls (the fallback) and retries the socket; one of them brings the command.
      socket.refuseWith = undefined;
      await arrived(run, lost);
      expect(seqs(run.handled)).toEqual([lost]);
    });
    // Reconnecting: a command queued while no socket was open (its push went nowhere) comes with the fetch after connecting.
    const missed = await enqueue(id, 'queued_offline');
    await withChannel(bridge, async (again) => {
      await arrived(again, missed);
      expect(again.fetches[0]).toBe(0);
      expect(seqs(again.handled)).toEqual([missed]);
    });
  });

  it('reconnects before the connection limit and loses nothing across the reconnects', async () => {
    const { id, bridge } = await checkedIn();
    await withChannel(bridge, { maxAgeMs: 400 }, async (run) => {
      const sent: number[] = [];
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const connection = await waitFor('a connection', () => socketOf(id));
        seen.add(connection);
        sent.push(await enqueue(id, 'tick', { i }));
        await new Promise((r) => setTimeout(r, 150));
      }
      await waitFor('every command', () =>
        sent.every((s) => run.handled.some((c) => c.seq === s)) ? true : undefined,
      );
      expect(seen.size).toBeGreaterThan(1);
      // Each exactly once, though some came by push and some by the fetch after a reconnect.
      expect(seqs(run.handled).sort((x, y) => x - y)).toEqual(sent);
    });
  });

  it('a heartbeat showing a newer command than it has seen makes it fetch the queue (a push that failed)', async () => {
    const { id, bridge } = await checkedIn();
    await withChannel(bridge, async (run) => {
      const connection = await waitFor('a connection', () => socketOf(id));
      await waitFor('the connect fetch', () => (run.fetches.length ? true : undefined));
      // The push fails (the connection looks gone to the pusher) but the program's socket stays open.
      const ws = socket.connections.get(connection)!;
      socket.connections.delete(connection);
      const seq = await enqueue(id, 'unpushed');
      socket.connections.set(connection, ws);
      expect(run.handled.some((c) => c.seq === seq)).toBe(false);
      const beat = await bridge.heartbeat(false);
      expect(beat).toEqual({ status: 'RUNNING', command_seq: seq });
      run.channel.noteQueued(beat.command_seq!);
      await arrived(run, seq);
      // Seen now: the next heartbeat's number fetches nothing more.
      const fetched = run.fetches.length;
      run.channel.noteQueued(seq);
      await new Promise((r) => setTimeout(r, 200));
      expect(run.fetches.length).toBe(fetched);
    });
  });

  it('long-polls when the socket cannot open, and moves to the socket once it can', async () => {
    const { id, bridge } = await checkedIn();
    socket.refuseWith = 502;
    await withChannel(bridge, { retryMs: 1500, maxRetryMs: 1500 }, async (run) => {
      await waitFor('a long-poll', () => (run.fetches.some((w) => w > 0) ? true : undefined));
      const polled = await enqueue(id, 'by_poll');
      await arrived(run, polled);
      expect(postsOf('by_poll')).toEqual([]);
      socket.refuseWith = undefined;
      const connection = await waitFor('the socket, once it opens', () => socketOf(id));
      await waitFor('the channel on it', () => (run.channel.connected ? true : undefined));
      const pushed = await enqueue(id, 'by_push');
      await arrived(run, pushed);
      expect(postsOf('by_push')[0]).toMatchObject({ connectionId: connection, status: 200 });
      expect(seqs(run.handled)).toEqual([polled, pushed]);
    });
  });

  it('a command over the frame size is announced and fetched over HTTP', async () => {
    const { id, bridge } = await checkedIn();
    await withChannel(bridge, async (run) => {
      await waitFor('a connection', () => socketOf(id));
      await waitFor('the connect fetch', () => (run.fetches.length ? true : undefined));
      const big = 'x'.repeat(40 * 1024);
      const seq = await stack.services.sandboxes.enqueueCommand('dev', id, { type: 'big', payload: { big } });
      await arrived(run, seq);
      expect(socket.posts.find((p) => p.text === '{"commands":[],"fetch":true}')).toBeDefined();
      expect((run.handled.find((c) => c.seq === seq)!.payload as { big: string }).big).toBe(big);
    });
  });
});

describe('who may connect (a hostile program)', () => {
  it("refuses another sandbox's key, no key, a key in the URL, and a sandbox that is not RUNNING; none of them moves the record", async () => {
    const a = await checkedIn();
    const b = await checkedIn();
    const { WebSocket } = await import('ws');
    const attempt = (query: string, headers: Record<string, string> = {}) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${socket.url}${query}`, { headers });
        ws.once('open', () => {
          ws.terminate();
          resolve(101);
        });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('error', () => resolve(0));
      });
    expect(await attempt(`?sandbox_id=${a.id}`, { 'x-session-api-key': b.key })).toBe(401);
    expect(await attempt(`?sandbox_id=${a.id}`)).toBe(401);
    expect(await attempt(`?sandbox_id=${a.id}&session_api_key=${a.key}`)).toBe(401);
    expect(await attempt('', { 'x-session-api-key': a.key })).toBe(401);
    expect(await attempt(`?sandbox_id=${a.id}`, { authorization: `Bearer ${stack.devKey}` })).toBe(401);
    expect(await socketOf(a.id)).toBeUndefined();
    // Its own key opens its own socket, and a's commands go to a's connection only.
    expect(await attempt(`?sandbox_id=${b.id}`, { 'x-session-api-key': b.key })).toBe(101);
    await withChannel(a.bridge, async (runA) => {
      const connA = await waitFor('a connected', () => socketOf(a.id));
      const seq = await enqueue(a.id, 'for_a');
      await arrived(runA, seq);
      expect(postsOf('for_a').map((p) => p.connectionId)).toEqual([connA]);
    });
    // Paused: the key no longer opens a socket.
    expect((await stack.call('POST', `/api/v1/sandboxes/${b.id}/pause`)).status).toBe(200);
    await waitForSandboxStatus(stack, b.id, 'PAUSED');
    expect(await attempt(`?sandbox_id=${b.id}`, { 'x-session-api-key': b.key })).toBe(401);
  });
});

describe('the program itself', () => {
  it('started with BRIDGE_SOCKET_URL, it connects with its own key and takes pushed commands', async () => {
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=program');
    expect(res.status).toBe(200);
    const id: string = res.body.id;
    await waitForSandboxStatus(stack, id, 'RUNNING', undefined, 60_000);
    const connection = await waitFor('its connection', () => socketOf(id), { timeoutMs: 30_000 });
    await enqueue(id, 'no_such_command');
    // Unknown commands are acknowledged and ignored: the queue empties, through the push.
    await waitFor(
      'the acknowledgement',
      async () => ((await store().listCommands(id, 10)).length === 0 ? true : undefined),
      { timeoutMs: 30_000 },
    );
    expect(postsOf('no_such_command')[0]).toMatchObject({ connectionId: connection, status: 200 });
    expect((await stack.call('POST', `/api/v1/sandboxes/${id}/pause`)).status).toBe(200);
  });
});
