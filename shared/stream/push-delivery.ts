import { randomUUID } from 'node:crypto';
import type { ConversationRef, EventStore } from '#shared/events/event-store.ts';
import { logger } from '#shared/logging.ts';
import type { ConnectionPush } from '#shared/stream/connection-push.ts';
import type { ConnectionStore } from '#shared/stream/connection-store.ts';
import type { EventFeed } from '#shared/stream/feed.ts';
import { streamMessage } from '#shared/stream/messages.ts';

export interface PushDeliveryOptions {
  /** How long a delivery lease lasts without progress (each message sent extends it). */
  leaseMs: number;
  /** Events read per store query. */
  pageSize: number;
  /** How long the resend step waits for API Gateway to open a connection whose `$connect` is returning. */
  openWaitMs: number;
  /**
   * The resend step stops sending once its function has less than this much time left (or a third of
   * what it had at its start, when that is less), enough to release the lease and continue itself.
   */
  stopMarginMs: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

const defaults: PushDeliveryOptions = {
  leaseMs: 30_000,
  pageSize: 100,
  openWaitMs: 10_000,
  stopMarginMs: 10_000,
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

/**
 * How a resend step ended: everything committed was sent (`sent`; or someone else holds the lease and
 * sends it), the connection is gone, or it stopped at its time budget with the lease released and
 * more to send: `more` after sending something (the caller continues it in a new invocation,
 * `resume`), `stalled` after sending nothing (no continuation that could not progress either: the
 * next ingest brings the rest).
 */
export type ResendOutcome = 'sent' | 'gone' | 'more' | 'stalled';

/** The Lambda's remaining time (its context's `getRemainingTimeInMillis`), and whether this is a continuation. */
export interface ResendBudget {
  remainingMs: () => number;
  /** A continuation of a resend that stopped at its budget: the connection was opened then; go straight to sending from `sentSeq`. */
  resume?: boolean;
}

/**
 * The AWS event feed: pushes a conversation's committed events to its open connections with
 * PostToConnection, following the stream's delivery rule. Per connection: in sequence order, each
 * event once, never past a gap (events are read from the store, which stops at the first missing
 * number). Several ingest functions may run at once for one conversation: each raises the
 * connection's `wantSeq`, and only the holder of its lease sends, moving `sentSeq` after every
 * message under a condition on the lease; whoever releases the lease and finds `wantSeq` raised
 * meanwhile goes on, so no commit is left unsent. A connection that is gone (410) is removed.
 */
export class PushDelivery implements EventFeed {
  private readonly options: PushDeliveryOptions;

  constructor(
    private readonly connections: ConnectionStore,
    private readonly events: EventStore,
    private readonly push: ConnectionPush,
    options: Partial<PushDeliveryOptions> = {},
  ) {
    this.options = { ...defaults, ...options };
  }

  async committed(conversation: ConversationRef, lastSeq: number): Promise<void> {
    if (lastSeq <= 0) return;
    const open = await this.connections.list(conversation);
    await Promise.all(
      open.filter((c) => c.sentSeq < lastSeq).map((c) => this.bring(conversation, c.connectionId, lastSeq)),
    );
  }

  /**
   * The step after `$connect` (which cannot send): waits until API Gateway has opened the
   * connection, opens it for pushes, then sends everything committed after its start position.
   * With a budget it stops before its function's time runs out, at an event boundary (`sentSeq` moves
   * after each message, so the next holder goes on from there), and answers `more`; a `resume`
   * skips the open-wait. Without one it runs to the end (the local tests, the contract).
   */
  async resend(conversation: ConversationRef, connectionId: string, budget?: ResendBudget): Promise<ResendOutcome> {
    const { now, sleep, openWaitMs, stopMarginMs } = this.options;
    let outOfTime: (() => boolean) | undefined;
    if (budget) {
      const margin = Math.min(stopMarginMs, budget.remainingMs() / 3);
      outOfTime = () => budget.remainingMs() < margin;
    }
    if (budget?.resume) {
      if (!(await this.connections.get(conversation, connectionId))) return 'gone';
    } else {
      const deadline = now() + openWaitMs;
      for (let wait = 50; !(await this.push.isOpen(connectionId)); wait = Math.min(wait * 2, 1000)) {
        // Closed before it opened ($disconnect removed it), or it never opened.
        if (!(await this.connections.get(conversation, connectionId))) return 'gone';
        if (now() > deadline) {
          await this.connections.remove(conversation, connectionId);
          return 'gone';
        }
        await sleep(wait);
      }
      if (!(await this.connections.markReady(conversation, connectionId))) return 'gone';
    }
    return this.bring(conversation, connectionId, await this.events.lastSeq(conversation), outOfTime);
  }

  /**
   * Asks for the connection to be brought to `target`, then sends if no one else is sending. With
   * `outOfTime`, stops before a message once it says so and releases the lease (`more` or `stalled`).
   */
  private async bring(
    conversation: ConversationRef,
    connectionId: string,
    target: number,
    outOfTime?: () => boolean,
  ): Promise<ResendOutcome> {
    await this.connections.want(conversation, connectionId, target);
    const owner = randomUUID();
    const { now, leaseMs, pageSize } = this.options;
    let progressed = false;
    for (;;) {
      const leased = await this.connections.lease(conversation, connectionId, owner, now(), now() + leaseMs);
      if (!leased) return 'sent'; // someone else is sending (and will see our wantSeq), or nothing to send
      let sent = leased.sentSeq;
      let stopped = false;
      try {
        while (sent < leased.wantSeq && !stopped) {
          const page = await this.events.query(conversation, {
            descending: false,
            limit: Math.min(pageSize, leased.wantSeq - sent),
            startKey: { seq: sent },
          });
          if (page.items.length === 0) break; // a gap: the ingest that fills it brings the rest
          for (const event of page.items) {
            if (outOfTime?.()) {
              stopped = true;
              break;
            }
            const seq = sent + 1;
            if (
              (await this.push.post(connectionId, streamMessage(conversation.conversationId, seq, event))) === 'gone'
            ) {
              await this.connections.remove(conversation, connectionId);
              return 'gone';
            }
            // Lost the lease (it expired while this function stalled): the new holder goes on from sentSeq.
            if (!(await this.connections.advance(conversation, connectionId, owner, sent, seq, now() + leaseMs)))
              return 'sent';
            sent = seq;
            progressed = true;
          }
        }
      } catch (err) {
        await this.connections
          .release(conversation, connectionId, owner)
          .catch((e: unknown) => logger.warn('stream.release-failed', { error: e as Error }));
        throw err;
      }
      const after = await this.connections.release(conversation, connectionId, owner);
      if (!after) return 'gone';
      if (stopped) return progressed ? 'more' : 'stalled';
      if (after.wantSeq <= after.sentSeq || sent < leased.wantSeq) return 'sent';
    }
  }
}
