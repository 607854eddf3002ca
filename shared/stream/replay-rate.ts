import { RequestRate } from '#shared/auth/request-rate.ts';
import type { StreamQuery } from '#shared/stream/messages.ts';

/**
 * Stream opens that ask for history (`resend_all`, `resend_mode`, `after_seq`) per user per minute. An
 * honest client asks once per page load and once per reconnect; a user looping replays on many sockets
 * is refused past this (close 4429; 429 at `$connect` on AWS), on top of the send pacing per user.
 */
export const REPLAYS_PER_USER_PER_MINUTE = 30;

/** Whether a stream open replays stored events (anything but "from now on"). */
export const asksForHistory = (q: StreamQuery): boolean =>
  q.resend_all === true || q.resend_mode !== undefined || q.after_seq !== undefined;

/**
 * The replays of each user, counted in the process that opens streams: exact behind the local gateway,
 * per `$connect` container on AWS (approximate, as the request rate is: shared/auth/request-rate.ts).
 */
export class ReplayRate {
  constructor(private readonly rate = new RequestRate()) {}

  /** Counts an open of `userId` that asks `query`; the refusal's reason, or undefined when allowed. */
  take(userId: string, query: StreamQuery): string | undefined {
    if (!asksForHistory(query)) return undefined;
    const wait = this.rate.take(userId, REPLAYS_PER_USER_PER_MINUTE);
    return wait === undefined
      ? undefined
      : `Too many replays: at most ${REPLAYS_PER_USER_PER_MINUTE} stream opens with history per user per minute (retry in ${Math.ceil(wait)} s)`;
  }
}

/** The process's (the container's) counts. */
export const replayRate = new ReplayRate();
