/**
 * How a warm standby waits for its binding: over its pool socket where the deployment has the bridge
 * socket (AWS), else by long-polling its wait route (locally, or while the socket is down).
 *
 * On the socket (docs/architecture.md, "The warm pool"): the standby connects with its pool credential
 * (`?standby_id=`), and the claim pushes it a wake-up (`{"fetch":true}`); the binding itself is always
 * taken through the wait route with `wait=0`, which delivers it once and kills the credential. The same
 * call every `heartbeatMs` (20 s) is the standby's heartbeat (a claim takes only standbys heard from within
 * 30 s), and one right after every (re)connect finds a claim made before the connection was recorded. So
 * no function waits for a standby: a Lambda long-poll billed its wall time around the clock. Pings, the
 * reconnect before API Gateway's 2-hour close and the back-off are the command socket's (command-channel.ts).
 */
import type { PoolWaitResponse } from '#shared/protocol.ts';
import { isUnauthorized, type PoolClient } from './bridge-client.ts';
import { type Log, type SocketTimings, sleep, socketSession } from './command-channel.ts';

export interface PoolChannelOptions extends SocketTimings {
  pool: PoolClient;
  /** `wss://...` (BRIDGE_SOCKET_URL); none: long-poll only. */
  socketUrl?: string;
  /** How long one long-poll waits (the server caps it). */
  waitSeconds: number;
  signal: AbortSignal;
  log: Log;
  /** On the socket: the wait route with `wait=0` this often (the heartbeat), under the claim's 30 s freshness. */
  heartbeatMs?: number;
}

/** Consecutive failed wait calls after which the standby gives up (the sweep forgets it after 90 s unheard). */
const MAX_FAILURES = 8;

export class PoolChannel {
  /** The answer that ends standing by (a binding, or stop); null: refused or given up; undefined: still waiting. */
  private result: PoolWaitResponse | null | undefined;
  private asking: Promise<void> | undefined;
  private again = false;
  private failures = 0;

  constructor(private readonly o: PoolChannelOptions) {}

  /** Waits until bound or told to stop; null when the credential is refused, the signal aborts or calls keep failing. */
  async run(): Promise<PoolWaitResponse | null> {
    const { signal, socketUrl } = this.o;
    const retryMs = this.o.retryMs ?? 1000;
    const maxRetryMs = this.o.maxRetryMs ?? 5 * 60_000;
    let socketFailures = 0;
    let socketRetryAt = 0;
    while (!signal.aborted && this.result === undefined) {
      if (socketUrl && Date.now() >= socketRetryAt) {
        const started = Date.now();
        let opened = false;
        try {
          opened = await this.socketSession(socketUrl);
        } catch (err) {
          this.o.log('warn', 'The pool socket failed', { error: (err as Error).message });
        }
        if (this.result !== undefined || signal.aborted) break;
        // A connection that closes at once counts as a failure, so a refused socket never spins.
        if (opened && Date.now() - started >= (this.o.minSessionMs ?? 10_000)) {
          socketFailures = 0;
          continue;
        }
        socketFailures++;
        const delay = Math.min(maxRetryMs, retryMs * 2 ** Math.min(socketFailures - 1, 20));
        socketRetryAt = Date.now() + delay;
        this.o.log('warn', 'The pool socket is unavailable; long-polling meanwhile', {
          failures: socketFailures,
          retryInMs: delay,
        });
      }
      // Until the socket's retry time: a long-poll no longer than the time left to it.
      const untilSocket = socketUrl ? Math.ceil((socketRetryAt - Date.now()) / 1000) : this.o.waitSeconds;
      await this.ask(Math.max(0, Math.min(this.o.waitSeconds, untilSocket)));
      if (this.result === undefined && this.failures) await sleep(500 * 2 ** Math.min(this.failures, 4), signal);
    }
    return this.result ?? null;
  }

  /** One wait call; its answer ends standing by when it brings the binding or stop. */
  private async ask(waitSeconds: number): Promise<void> {
    if (this.result !== undefined) return;
    try {
      const out = await this.o.pool.wait(waitSeconds);
      this.failures = 0;
      if (out.stop || out.binding) this.result = out;
    } catch (err) {
      if (isUnauthorized(err) || this.o.signal.aborted) this.result = null;
      else if (++this.failures > MAX_FAILURES) {
        this.o.log('error', 'The pool wait route keeps failing; giving up', { error: (err as Error).message });
        this.result = null;
      } else this.o.log('warn', 'Pool wait failed', { error: (err as Error).message, failures: this.failures });
    }
  }

  /**
   * On the socket, `wait=0`, one call at a time: two racing calls would each try to take the binding, and the
   * second, finding it delivered, would read `stop`. A wake-up during a call asks once more after it.
   */
  private fetch(): Promise<void> {
    if (this.asking) {
      this.again = true;
      return this.asking;
    }
    const run = (async () => {
      do {
        this.again = false;
        await this.ask(0);
      } while (this.again && this.result === undefined);
    })();
    this.asking = run.finally(() => {
      this.asking = undefined;
    });
    return this.asking;
  }

  /** One pool-socket connection: false when it never opened. It ends once the binding (or stop) is taken. */
  private async socketSession(socketUrl: string): Promise<boolean> {
    let heartbeat: NodeJS.Timeout | undefined;
    try {
      return await socketSession({
        name: 'pool socket',
        ...this.o.pool.socketTarget(socketUrl),
        signal: this.o.signal,
        log: this.o.log,
        pingMs: this.o.pingMs ?? 5 * 60_000,
        pongTimeoutMs: this.o.pongTimeoutMs ?? 30_000,
        maxAgeMs: this.o.maxAgeMs ?? 110 * 60_000,
        onOpen: (end) => {
          this.o.log('info', 'Pool socket open');
          const settle = () =>
            void this.fetch().then(() => {
              if (this.result !== undefined) end('standing by ended');
            });
          heartbeat = setInterval(settle, this.o.heartbeatMs ?? 20_000);
          this.onWake = settle;
          // A claim made before this connection was recorded pushed nothing: look once now.
          settle();
        },
        onMessage: (text) => {
          if (isWake(text)) this.onWake?.();
        },
      });
    } finally {
      clearInterval(heartbeat);
      this.onWake = undefined;
      await this.asking;
    }
  }

  private onWake: (() => void) | undefined;
}

/** The claim's wake-up (`{"fetch":true}`); anything else (the pong) is not one. */
function isWake(text: string): boolean {
  try {
    return (JSON.parse(text) as { fetch?: unknown }).fetch === true;
  } catch {
    return false;
  }
}
