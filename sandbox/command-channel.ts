/**
 * How the program takes its commands: over the bridge socket where the deployment has one (AWS: an
 * API Gateway WebSocket the program connects OUT to with its session key; commands are pushed to it)
 * and over the HTTP long-poll otherwise (locally, or while the socket is down). Either way each
 * command is handed to `handle` once, in arrival order, and acknowledged over HTTP by its `seq`
 * (the queue keeps it until then, so a push that went missing is found by the next fetch).
 *
 * Socket rules (API Gateway's limits): a ping every `pingMs` (under the 10-minute idle limit); a new
 * connection before `maxAgeMs` (under the 2-hour limit); after every (re)connect one HTTP fetch of the
 * queue, so nothing queued while disconnected is lost; a heartbeat that reports a newer `command_seq`
 * than the program has seen triggers the same fetch (a push that failed). A socket that cannot open
 * is retried with back-off, and the program long-polls meanwhile.
 */
import type { BridgeClient, BridgeCommand } from './bridge-client.ts';
import { isUnauthorized } from './bridge-client.ts';

export type Log = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** The socket's timings (API Gateway's limits), shared by the command channel and the pool channel. */
export interface SocketTimings {
  /** Ping interval, under API Gateway's 10-minute idle limit. */
  pingMs?: number;
  /** A socket that answers nothing (pong or command) for this long after a ping is dropped. */
  pongTimeoutMs?: number;
  /** Reconnect after this long, before API Gateway's 2-hour limit. */
  maxAgeMs?: number;
  /** First retry delay of a socket that failed; doubles up to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
  /** A connection shorter than this counts as a failure (back-off, long-poll meanwhile). */
  minSessionMs?: number;
}

export interface CommandChannelOptions extends SocketTimings {
  bridge: BridgeClient;
  /** `wss://...` (BRIDGE_SOCKET_URL); none: long-poll only. */
  socketUrl?: string;
  /** How long one long-poll waits (the server caps it). */
  waitSeconds: number;
  /** Ends the channel once the command being handled is done. */
  signal: AbortSignal;
  log: Log;
}

/** What the server returns per fetch at most (the long-poll's page). */
const PAGE = 10;

/** Resolves after `ms`, or at once when `signal` aborts. */
export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

export class CommandChannel {
  private readonly queue: BridgeCommand[] = [];
  private readonly taken = new Set<number>();
  /** Every command up to this seq has been taken or looked for. */
  private checkedThrough = 0;
  private wake: (() => void) | undefined;
  private idle: (() => void)[] = [];
  private busy = false;
  private socketOpen = false;
  private fetching: Promise<void> | undefined;
  private readonly pingMs: number;
  private readonly pongTimeoutMs: number;
  private readonly maxAgeMs: number;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly minSessionMs: number;

  constructor(private readonly o: CommandChannelOptions) {
    this.pingMs = o.pingMs ?? 5 * 60_000;
    this.pongTimeoutMs = o.pongTimeoutMs ?? 30_000;
    this.maxAgeMs = o.maxAgeMs ?? 110 * 60_000;
    this.retryMs = o.retryMs ?? 1000;
    this.maxRetryMs = o.maxRetryMs ?? 5 * 60_000;
    this.minSessionMs = o.minSessionMs ?? 10_000;
  }

  /** Whether commands come over the socket right now (else by long-poll). */
  get connected(): boolean {
    return this.socketOpen;
  }

  /**
   * Takes commands until the signal aborts, handing each to `handle` (which acknowledges it). Rejects
   * with the bridge's 401 when the session key is refused.
   */
  async run(handle: (command: BridgeCommand) => Promise<void>): Promise<void> {
    const consumer = this.consume(handle);
    try {
      await this.produce();
    } finally {
      this.wake?.();
      await consumer;
    }
  }

  /**
   * The last command number the control plane queued (from a heartbeat). On the socket, a number not
   * yet seen means a push went missing: fetch the queue once. (The long-poll finds it on its own.)
   */
  noteQueued(seq: number): void {
    if (seq > this.checkedThrough && this.socketOpen)
      void this.fetchQueue(seq).catch((err: unknown) =>
        this.o.log('warn', 'Fetching commands failed', { error: (err as Error).message }),
      );
  }

  private async produce(): Promise<void> {
    const { signal } = this.o;
    let socketFailures = 0;
    let socketRetryAt = 0;
    let pollFailures = 0;
    while (!signal.aborted) {
      if (this.o.socketUrl && Date.now() >= socketRetryAt) {
        const started = Date.now();
        let opened = false;
        try {
          opened = await this.socketSession(this.o.socketUrl);
        } catch (err) {
          this.o.log('warn', 'The command socket failed', { error: (err as Error).message });
        }
        // A connection that closes at once counts as a failure, so a bad socket never spins.
        if (opened && Date.now() - started >= this.minSessionMs) {
          socketFailures = 0;
          continue;
        }
        if (signal.aborted) break;
        socketFailures++;
        const delay = Math.min(this.maxRetryMs, this.retryMs * 2 ** Math.min(socketFailures - 1, 20));
        socketRetryAt = Date.now() + delay;
        this.o.log('warn', 'The command socket is unavailable; long-polling meanwhile', {
          failures: socketFailures,
          retryInMs: delay,
        });
      }
      try {
        // Until the socket's retry time: a long-poll no longer than the time left to it.
        const untilSocket = this.o.socketUrl ? Math.ceil((socketRetryAt - Date.now()) / 1000) : this.o.waitSeconds;
        this.take(await this.o.bridge.commands(Math.max(0, Math.min(this.o.waitSeconds, untilSocket))));
        pollFailures = 0;
        await this.drained();
      } catch (err) {
        if (signal.aborted) break;
        if (isUnauthorized(err)) throw err;
        pollFailures++;
        this.o.log('warn', 'Polling for commands failed', { error: (err as Error).message, failures: pollFailures });
        await sleep(Math.min(30_000, 500 * 2 ** Math.min(pollFailures, 6)), signal);
      }
    }
  }

  /**
   * One connection, from open to close (`socketSession`). False when it never opened (refused,
   * unreachable). While it is open, commands arrive as pushes.
   */
  private async socketSession(socketUrl: string): Promise<boolean> {
    const target = this.o.bridge.socketTarget(socketUrl);
    const opened = await socketSession({
      name: 'command socket',
      ...target,
      signal: this.o.signal,
      log: this.o.log,
      pingMs: this.pingMs,
      pongTimeoutMs: this.pongTimeoutMs,
      maxAgeMs: this.maxAgeMs,
      onOpen: (end) => {
        this.socketOpen = true;
        this.o.log('info', 'Command socket open');
        // Whatever was queued while no socket was open (and before this one was recorded).
        void this.fetchQueue(0).catch((err: unknown) => {
          this.o.log('warn', 'Fetching commands after connecting failed; retrying on a new connection', {
            error: (err as Error).message,
          });
          end('fetch failed');
        });
      },
      onMessage: (text) => this.onMessage(text),
    });
    if (this.socketOpen) {
      this.socketOpen = false;
      this.o.log('info', 'Command socket closed');
    }
    return opened;
  }

  private onMessage(text: string): void {
    let message: { commands?: unknown; fetch?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      this.o.log('warn', 'Ignored a command socket message that is not JSON');
      return;
    }
    if (Array.isArray(message.commands)) this.take(message.commands as BridgeCommand[]);
    // A command too large for one frame: fetch it.
    if (message.fetch === true)
      void this.fetchQueue(0).catch((err: unknown) =>
        this.o.log('warn', 'Fetching commands failed', { error: (err as Error).message }),
      );
  }

  /**
   * Fetches the queue over HTTP (no wait) until a page comes back short; afterwards every command up
   * to `through` has been looked for. One fetch at a time; a second caller waits for it, then fetches.
   */
  private async fetchQueue(through: number): Promise<void> {
    while (this.fetching) await this.fetching;
    const run = (async () => {
      for (;;) {
        const page = await this.o.bridge.commands(0);
        this.take(page);
        if (page.length < PAGE) break;
        // A full page: its commands leave the queue as they are acknowledged; then look again.
        await this.drained();
        if (this.o.signal.aborted) return;
      }
      this.checkedThrough = Math.max(this.checkedThrough, through);
    })();
    this.fetching = run;
    try {
      await run;
    } finally {
      this.fetching = undefined;
    }
  }

  /** Queues commands not taken before (by `seq`; 0, the synthetic stop, always). */
  private take(commands: BridgeCommand[]): void {
    for (const c of commands) {
      if (typeof c?.seq !== 'number' || typeof c.type !== 'string') continue;
      if (c.seq > 0) {
        if (this.taken.has(c.seq)) continue;
        this.taken.add(c.seq);
        this.checkedThrough = Math.max(this.checkedThrough, c.seq);
      }
      this.queue.push(c);
    }
    if (this.queue.length) this.wake?.();
  }

  /** Resolves when every taken command has been handled. */
  private drained(): Promise<void> {
    if (!this.busy && !this.queue.length) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private async consume(handle: (command: BridgeCommand) => Promise<void>): Promise<void> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        this.busy = true;
        await handle(next);
        this.busy = false;
        // The command may have stopped the program: what is left stays queued on the server.
        if (this.o.signal.aborted) break;
        continue;
      }
      for (const resolve of this.idle.splice(0)) resolve();
      if (this.o.signal.aborted) break;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    for (const resolve of this.idle.splice(0)) resolve();
  }
}

export interface SocketSessionOptions {
  /** What the log lines call it ('command socket', 'pool socket'). */
  name: string;
  /** `wss://...` with its query. */
  url: string;
  /** The credential (a header: never in the URL, which access logs keep). */
  headers: Record<string, string>;
  signal: AbortSignal;
  log: Log;
  pingMs: number;
  pongTimeoutMs: number;
  maxAgeMs: number;
  /** The connection is open; `end` closes it (the caller reconnects). */
  onOpen(end: (why: string) => void): void;
  onMessage(text: string): void;
}

/**
 * One connection to an API Gateway WebSocket, from open to close, under API Gateway's limits: a ping
 * every `pingMs` (under the 10-minute idle limit), dropped when nothing answers within `pongTimeoutMs`,
 * closed at `maxAgeMs` (before the 2-hour limit). Resolves false when it never opened (refused,
 * unreachable), true once an open connection ended (the signal, a missed pong, an error, the server
 * closing it, `maxAgeMs`, or `end`). The sandbox's command socket and a standby's pool socket use it.
 */
export async function socketSession(o: SocketSessionOptions): Promise<boolean> {
  const { WebSocket } = await import('ws');
  const ws = new WebSocket(o.url, { headers: o.headers, handshakeTimeout: 10_000 });
  const opened = await new Promise<boolean>((resolve) => {
    ws.once('open', () => resolve(true));
    ws.once('unexpected-response', (_req, res) => {
      o.log('warn', `The ${o.name} refused the connection`, { status: res.statusCode });
      ws.terminate();
      resolve(false);
    });
    ws.once('error', (err) => {
      o.log('warn', `The ${o.name} failed to open`, { error: err.message });
      resolve(false);
    });
    ws.once('close', () => resolve(false));
  });
  if (!opened || o.signal.aborted) {
    ws.terminate();
    return opened;
  }
  let answered = true;
  let ended = false;
  await new Promise<void>((resolve) => {
    const end = (why: string, kill = false) => {
      if (ended) return;
      ended = true;
      clearInterval(pinger);
      clearTimeout(rotate);
      clearTimeout(pongWait);
      o.signal.removeEventListener('abort', onAbort);
      if (!kill && ws.readyState === ws.OPEN) ws.close(1000, why);
      else ws.terminate();
      resolve();
    };
    const onAbort = () => end('stopping');
    let pongWait: NodeJS.Timeout | undefined;
    const pinger = setInterval(() => {
      ws.send(JSON.stringify({ action: 'ping' }));
      // An earlier ping still waiting keeps its deadline: pings never postpone it.
      if (pongWait) return;
      answered = false;
      pongWait = setTimeout(() => {
        pongWait = undefined;
        if (answered) return;
        o.log('warn', `The ${o.name} did not answer a ping; reconnecting`);
        end('no pong', true);
      }, o.pongTimeoutMs);
    }, o.pingMs);
    const rotate = setTimeout(() => end('reconnecting before the connection limit'), o.maxAgeMs);
    o.signal.addEventListener('abort', onAbort, { once: true });
    ws.on('message', (data) => {
      answered = true;
      o.onMessage(String(data));
    });
    ws.once('close', () => end('closed'));
    ws.once('error', (err) => {
      o.log('warn', `${o.name[0]!.toUpperCase()}${o.name.slice(1)} error`, { error: err.message });
      end('error');
    });
    o.onOpen((why) => end(why));
  });
  return true;
}
