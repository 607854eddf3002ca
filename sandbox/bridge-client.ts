/**
 * The sandbox's one client of the control plane: the bridge (check in, heartbeat, long-poll for
 * commands, acknowledge them, where the bridge socket is (command-channel.ts opens it), workspace snapshots) and the bridge routes a conversation uses (its start
 * configuration, status reports, events). Every path and body comes from the protocol module
 * (shared/protocol.ts); nothing else in sandbox/ builds a control-plane URL. Plain fetch.
 */

import {
  fillPath,
  type CheckInBody,
  type CheckInResponse,
  type ConversationReport,
  type PoolWaitResponse,
  type ProtocolPath,
  type SandboxCommand,
  type SandboxStatus,
  type SnapshotDownload,
  type SnapshotUpload,
  type StartConfig,
  type WorkspaceReplyBody,
} from '#shared/protocol.ts';
import type { SnapshotBridge } from './snapshots.ts';

export type BridgeCommand = SandboxCommand;

/** An HTTP answer other than 2xx; `status` 401 means this program's credential is no longer good. */
export class BridgeError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** From a 429's `Retry-After` (seconds), when it had one. */
    readonly retryAfterMs?: number,
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

  /** Exchanges the one-time enrollment token for the session key. */
  async checkIn(enrollmentToken: string, info: CheckInBody): Promise<CheckInResponse> {
    const out = await this.call<CheckInResponse>('POST', 'checkIn', { body: info, key: enrollmentToken });
    this.key = out.session_api_key;
    return out;
  }

  /**
   * `active`: the agent did work since the last heartbeat; `restoreMs`: how long the workspace's
   * restore took (sent once). Returns the sandbox's status and the last command queued.
   */
  async heartbeat(active: boolean, restoreMs?: number): Promise<{ status: SandboxStatus; command_seq?: number }> {
    return this.call('POST', 'heartbeat', {
      body: { active, ...(restoreMs !== undefined ? { restore_ms: restoreMs } : {}) },
    });
  }

  /** Waits up to `waitSeconds` (the server may cap it) for commands. */
  async commands(waitSeconds: number): Promise<BridgeCommand[]> {
    const out = await this.call<{ commands: BridgeCommand[] }>('GET', 'commands', {
      query: { wait: waitSeconds },
      timeoutMs: (waitSeconds + 15) * 1000,
    });
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
    await this.call('POST', 'ack', { params: { seq }, abortable: false });
  }

  /** The answer to a workspace read (command `seq`): the route that queued it is waiting for it. */
  async reply(seq: number, body: WorkspaceReplyBody): Promise<void> {
    await this.call('POST', 'reply', { params: { seq }, body, timeoutMs: 10_000 });
  }

  /** Workspace snapshots (AWS): not aborted by the stop signal, since stopping is when the last one is saved. */
  snapshotUpload(): Promise<SnapshotUpload> {
    return this.call('POST', 'snapshotUpload', { abortable: false });
  }

  async snapshotComplete(key: string): Promise<void> {
    await this.call('POST', 'snapshotComplete', { body: { key }, abortable: false });
  }

  async snapshotDownload(): Promise<{ url: string } | null> {
    const out = await this.call<SnapshotDownload>('GET', 'snapshotDownload', { abortable: false });
    return out.url ? { url: out.url } : null;
  }

  /** What a conversation placed on this sandbox needs to start (LLM settings, secrets, repository). */
  startConfig(conversationId: string): Promise<StartConfig> {
    return this.call('GET', 'startConfig', { params: { conversation_id: conversationId }, timeoutMs: 30_000 });
  }

  /** A conversation's start progress, execution status or metrics. */
  async report(report: ConversationReport): Promise<void> {
    await this.call('POST', 'report', { body: report, timeoutMs: 30_000 });
  }

  /**
   * A batch of a conversation's events, numbered from `firstSeq`. Not aborted by the stop signal: the
   * events queued when the program stops are still delivered.
   */
  async postEvents(conversationId: string, firstSeq: number, events: unknown[], timeoutMs: number): Promise<void> {
    await this.call('POST', 'events', {
      params: { conversation_id: conversationId },
      query: { first_seq: firstSeq },
      body: events,
      timeoutMs,
      abortable: false,
    });
  }

  private async call<T>(
    method: string,
    path: ProtocolPath,
    options: {
      params?: Record<string, string | number>;
      query?: Record<string, number>;
      body?: unknown;
      key?: string;
      timeoutMs?: number;
      abortable?: boolean;
    },
  ): Promise<T> {
    const key = options.key ?? this.key;
    if (!key) throw new BridgeError(401, 'Not checked in');
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 15_000);
    const query = options.query
      ? `?${new URLSearchParams(Object.entries(options.query).map(([k, v]): [string, string] => [k, String(v)]))}`
      : '';
    const res = await fetch(
      `${this.baseUrl}${fillPath(path, { sandbox_id: this.sandboxId, ...options.params })}${query}`,
      {
        method,
        headers: {
          'x-session-api-key': key,
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: this.stopSignal && options.abortable !== false ? AbortSignal.any([timeout, this.stopSignal]) : timeout,
      },
    );
    const text = await res.text();
    if (!res.ok) {
      const retryAfter = Number(res.headers.get('retry-after'));
      throw new BridgeError(
        res.status,
        `${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`,
        Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 60) * 1000 : undefined,
      );
    }
    return JSON.parse(text) as T;
  }
}

/**
 * A standby's client of its pool routes, with its pool credential: check in with its public key,
 * then wait (each call its heartbeat) for the binding a claim writes, woken on its pool socket where
 * there is one (pool-channel.ts). The credential reaches nothing else.
 */
export class PoolClient {
  constructor(
    private readonly baseUrl: string,
    private readonly standbyId: string,
    private readonly token: string,
    private readonly stopSignal?: AbortSignal,
  ) {}

  async checkIn(publicKey: string, version: string): Promise<{ wait_seconds: number }> {
    return this.call('POST', 'poolCheckIn', '', { public_key: publicKey, version }, 15_000);
  }

  wait(waitSeconds: number): Promise<PoolWaitResponse> {
    return this.call('GET', 'poolWait', `?wait=${waitSeconds}`, undefined, (waitSeconds + 15) * 1000);
  }

  /** The pool socket (AWS): the bridge socket with the standby in the query and the pool credential in a header. */
  socketTarget(socketUrl: string): { url: string; headers: Record<string, string> } {
    const url = new URL(socketUrl);
    url.searchParams.set('standby_id', this.standbyId);
    return { url: url.href, headers: { 'x-session-api-key': this.token } };
  }

  private async call<T>(
    method: string,
    path: ProtocolPath,
    query: string,
    body: unknown,
    timeoutMs: number,
  ): Promise<T> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const res = await fetch(`${this.baseUrl}${fillPath(path, { standby_id: this.standbyId })}${query}`, {
      method,
      headers: {
        'x-session-api-key': this.token,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: this.stopSignal ? AbortSignal.any([timeout, this.stopSignal]) : timeout,
    });
    const text = await res.text();
    if (!res.ok) throw new BridgeError(res.status, `${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text) as T;
  }
}
