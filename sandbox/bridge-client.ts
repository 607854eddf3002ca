/**
 * The sandbox side of the bridge protocol: check in, heartbeat, long-poll for commands, acknowledge
 * them, where the bridge socket is (command-channel.ts opens it). Plain fetch, no dependencies, so
 * the sandbox image carries nothing of the control plane.
 */

import type { SnapshotBridge, SnapshotUpload } from './snapshots.ts';

export interface BridgeCommand {
  /** Queue position; 0 for the control plane's synthetic `stop`. */
  seq: number;
  type: string;
  payload: unknown;
  created_at: string;
}

export interface CheckInResult {
  sandbox_id: string;
  session_api_key: string;
  heartbeat_seconds: number;
  poll_wait_seconds: number;
}

/** An HTTP answer other than 2xx; `status` 401 means this program's credential is no longer good. */
export class BridgeError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'BridgeError';
  }
}

export const isUnauthorized = (err: unknown) => err instanceof BridgeError && err.status === 401;

export class BridgeClient implements SnapshotBridge {
  private key: string | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly sandboxId: string,
    /** Aborts calls in flight when the program stops. */
    private readonly stopSignal?: AbortSignal,
  ) {}

  /** The session key from check-in (for the agent's own calls, e.g. posting events). */
  get sessionKey(): string | undefined {
    return this.key;
  }

  /** Exchanges the one-time enrollment token for the session key. */
  async checkIn(enrollmentToken: string, info: { version: string; capabilities: string[] }): Promise<CheckInResult> {
    const out = await this.call<CheckInResult>('POST', 'check-in', { body: info, key: enrollmentToken });
    this.key = out.session_api_key;
    return out;
  }

  /** `active`: the agent did work since the last heartbeat. Returns the sandbox's status and the last command queued. */
  async heartbeat(active: boolean): Promise<{ status: string; command_seq?: number }> {
    return this.call('POST', 'heartbeat', { body: { active } });
  }

  /** Waits up to `waitSeconds` (the server may cap it) for commands. */
  async commands(waitSeconds: number): Promise<BridgeCommand[]> {
    const out = await this.call<{ commands: BridgeCommand[] }>('GET', `commands?wait=${waitSeconds}`, { timeoutMs: (waitSeconds + 15) * 1000 });
    return out.commands;
  }

  /**
   * Where and how to open the bridge socket (AWS): the sandbox in the query, the session key in a
   * header (never in the URL, which access logs keep).
   */
  socketTarget(socketUrl: string): { url: string; headers: Record<string, string> } {
    if (!this.key) throw new BridgeError(401, 'Not checked in');
    const url = new URL(socketUrl);
    url.searchParams.set('sandbox_id', this.sandboxId);
    return { url: url.href, headers: { 'x-session-api-key': this.key } };
  }

  /** Not aborted by the stop signal: the command that stopped the program is still acknowledged. */
  async ack(seq: number): Promise<void> {
    await this.call('POST', `commands/${seq}/ack`, { abortable: false });
  }

  /** Workspace snapshots (AWS): not aborted by the stop signal, since stopping is when the last one is saved. */
  snapshotUpload(): Promise<SnapshotUpload> {
    return this.call('POST', 'snapshots', { abortable: false });
  }

  async snapshotComplete(key: string): Promise<void> {
    await this.call('POST', 'snapshots/complete', { body: { key }, abortable: false });
  }

  async snapshotDownload(): Promise<{ url: string } | null> {
    const out = await this.call<{ url: string | null }>('GET', 'snapshots/current', { abortable: false });
    return out.url ? { url: out.url } : null;
  }

  private async call<T>(method: string, path: string, options: { body?: unknown; key?: string; timeoutMs?: number; abortable?: boolean }): Promise<T> {
    const key = options.key ?? this.key;
    if (!key) throw new BridgeError(401, 'Not checked in');
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 15_000);
    const res = await fetch(`${this.baseUrl}/api/v1/sandboxes/${encodeURIComponent(this.sandboxId)}/bridge/${path}`, {
      method,
      headers: { 'x-session-api-key': key, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: this.stopSignal && options.abortable !== false ? AbortSignal.any([timeout, this.stopSignal]) : timeout,
    });
    const text = await res.text();
    if (!res.ok) throw new BridgeError(res.status, `${method} ${path.split('?')[0]}: HTTP ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text) as T;
  }
}
