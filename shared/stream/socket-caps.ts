import type { Plan } from '#shared/plans/model.ts';

/** Close code of a socket over a cap (the HTTP status 429 in the private range, as the other close codes). */
export const CLOSE_TOO_MANY = 4429 as const;

/**
 * Sockets one client address (shared/http/client-address.ts) may hold while they are not yet
 * authenticated (first-message auth pending): locally counted here, on AWS at `$connect` in
 * `streamConnections` (shared/stream/dynamo-connection-store.ts `addPending`). One page load opens
 * one or two; ten leaves room for a few tabs and an office behind one address.
 */
export const MAX_PENDING_SOCKETS_PER_IP = 10;

/** The refusal's reason, the same locally (close 4429) and on AWS (`$connect` 429). */
export const tooManyPending = (max = MAX_PENDING_SOCKETS_PER_IP) =>
  `Too many unauthenticated streams from one address (${max})`;

/** A refusal over a cap: the close code and a reason a person can read (at most 123 bytes). */
export interface CapRefusal {
  code: typeof CLOSE_TOO_MANY;
  reason: string;
}

/** Gives the slot back; idempotent (a close and an error may both call it). */
export type Release = () => void;

/**
 * The open stream sockets of one server process, counted per user and per conversation, held to
 * the plan's `max_stream_sockets_per_user` and `max_stream_sockets_per_conversation`. Locally one
 * process serves every socket, so the count is exact; on AWS `$connect` counts through the
 * `byUser` index of `streamConnections` instead (shared/stream/socket-stream.ts `SocketStream.connect`).
 *
 * `admitPending(ip)` is the hook for sockets that have not authenticated yet (first-message auth):
 * they are counted per address until they authenticate (then `admit` takes over) or close.
 */
export class SocketCaps {
  private readonly byUser = new Map<string, number>();
  private readonly byConversation = new Map<string, number>();
  private readonly pendingByIp = new Map<string, number>();

  /** Takes a slot for an authenticated socket, or says which cap it is over. */
  admit(userId: string, conversationId: string, plan: Plan): Release | CapRefusal {
    const conversationKey = `${userId}#${conversationId}`;
    const user = this.byUser.get(userId) ?? 0;
    const conversation = this.byConversation.get(conversationKey) ?? 0;
    if (user >= plan.max_stream_sockets_per_user)
      return {
        code: CLOSE_TOO_MANY,
        reason: `Too many open streams: at most ${plan.max_stream_sockets_per_user} per user`,
      };
    if (conversation >= plan.max_stream_sockets_per_conversation)
      return {
        code: CLOSE_TOO_MANY,
        reason: `Too many open streams: at most ${plan.max_stream_sockets_per_conversation} per conversation`,
      };
    this.byUser.set(userId, user + 1);
    this.byConversation.set(conversationKey, conversation + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.byUser, userId);
      decrement(this.byConversation, conversationKey);
    };
  }

  /** Takes a slot for a socket still waiting for its first-message auth, per remote address. */
  admitPending(ip: string, max = MAX_PENDING_SOCKETS_PER_IP): Release | CapRefusal {
    const n = this.pendingByIp.get(ip) ?? 0;
    if (n >= max) return { code: CLOSE_TOO_MANY, reason: tooManyPending(max) };
    this.pendingByIp.set(ip, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.pendingByIp, ip);
    };
  }

  /** Open sockets of a user (tests, the benchmark). */
  openFor(userId: string): number {
    return this.byUser.get(userId) ?? 0;
  }
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 0) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

export const isRefusal = (x: Release | CapRefusal): x is CapRefusal => typeof x !== 'function';
