import type { AgentEventEnvelope } from '#shared/protocol.ts';

/** How far past the committed end a batch may start (a sandbox may have a few batches in flight). */
export const MAX_SEQ_AHEAD = 1000;

export interface EventQuery {
  kind?: string;
  timestampGte?: string;
  timestampLt?: string;
  descending: boolean;
  limit: number;
  /** A position from an earlier page (`lastKey` or `tailKey`): the page starts after it. */
  startKey?: Record<string, unknown>;
}

export interface EventPage {
  items: AgentEventEnvelope[];
  /** Where the next page starts; absent when the store has nothing more now. */
  lastKey?: Record<string, unknown>;
  /** How far this page read, for following a conversation as it grows (never past a gap). */
  tailKey?: Record<string, unknown>;
}

/** Which conversation: ids are unique per user only, so the user is part of the identity. */
export interface ConversationRef {
  userId: string;
  conversationId: string;
}

/**
 * What an append did: `added` events of the batch this call committed (moved the committed end over:
 * a racing post of the same batch counts them once, and a batch stored beyond a gap counts 0 until
 * a call carries the end over it); events 1..`lastSeq` are committed.
 */
export interface Appended {
  added: number;
  lastSeq: number;
  /** Some of the batch was past `limits.maxEvents` and was not stored. */
  overCap?: boolean;
}

/** The counter item as read: the committed end and the rate bucket's state (`tat`, ms since the epoch). */
export interface Head {
  lastSeq: number;
  tat?: number;
  /**
   * The organization's stored event bytes as the sweeper last summed them (`OrgEventBytes`): what
   * ingest holds the plan's `max_event_bytes_per_org` against, within one sweep.
   */
  orgBytes?: number;
  /** The agent's latest usage report not yet in the ledger (JSON), kept by `AppendLimits.agentReport`. */
  agentReport?: string;
}

/** A plan's limits on a sandbox's posts, applied by `append` in the write that commits the batch. */
export interface AppendLimits {
  /** Events per second (a token bucket of one second's burst). */
  eventsPerSecond: number;
  /** Events a conversation may hold: numbers past it are not stored (`overCap`). */
  maxEvents: number;
  /** The organization the bytes count toward (the sweeper sums them per organization); none: not counted. */
  orgId?: string;
  /**
   * Kept on the counter in the bucket's write (no request of its own): the agent's latest LLM usage
   * report (JSON) for the ledger to record later (shared/conversations/bridge.ts, `agentReportDue`).
   */
  agentReport?: string;
  now?: () => number;
}

/** Over the rate: nothing was committed; retry after `retryAfterMs`. */
export class RateLimitedError extends Error {
  constructor(readonly retryAfterMs: number) {
    super(`Too many events: retry after ${Math.ceil(retryAfterMs / 1000)} s`);
  }
}

/** How much burst the bucket holds: one second's worth of events. */
export const BURST_MS = 1000;

/**
 * The token bucket as a GCRA: `tat` is when the bucket would be full again. A batch of `n` moves it
 * by `n / rate` seconds; it passes when that leaves it at most `BURST_MS` ahead of now (or when the
 * bucket is full, so a batch larger than a second's worth still goes alone). Pure: the store keeps
 * `tat` on the counter item and writes it in the conditional write that commits the batch.
 */
export function charge(
  tat: number | undefined,
  now: number,
  n: number,
  eventsPerSecond: number,
): { tat: number } | { retryAfterMs: number } {
  const start = Math.max(tat ?? 0, now);
  const next = start + (n * 1000) / eventsPerSecond;
  if (start === now || next - now <= BURST_MS) return { tat: next };
  return { retryAfterMs: next - now - BURST_MS };
}

/** A batch starts further ahead of the committed events than `MAX_SEQ_AHEAD` allows. */
export class SequenceAheadError extends Error {
  constructor(readonly lastSeq: number) {
    super(`first_seq must be at most ${lastSeq + 1 + MAX_SEQ_AHEAD} (${lastSeq} events are stored)`);
  }
}

/**
 * A conversation's events by sequence number (1, 2, 3, ..., given by the sandbox).
 * Adapters: `DynamoEventStore`.
 */
export interface EventStore {
  /**
   * Stores `events` as numbers `firstSeq`, `firstSeq + 1`, ... Numbers at or below the committed end
   * (`lastSeq`) are left as they are: a retried batch changes nothing, and an event once committed
   * is never rewritten. Throws `SequenceAheadError` past the allowed window. Returns how many of the
   * batch this call committed and the committed end as this call left it (at least that: a concurrent append may have
   * moved it further), so the caller need not read it again. `committed`, when given, is `lastSeq`
   * (or the whole `head`) as the caller read it just before (e.g. beside another read), and saves
   * this call that read. With `limits`: throws `RateLimitedError` (nothing written) over the rate,
   * and stores nothing past `maxEvents` (`overCap`); the bucket moves in the same conditional write
   * that commits the batch (or flags it beyond a gap): no request more.
   */
  append(
    conversation: ConversationRef,
    firstSeq: number,
    events: AgentEventEnvelope[],
    committed?: number | Head,
    limits?: AppendLimits,
  ): Promise<Appended>;
  /** The committed end: events 1..n are all stored (a read, whatever the conversation's size). */
  lastSeq(conversation: ConversationRef): Promise<number>;
  /** The counter item: the committed end and the rate bucket (the one read an ingest makes of it). */
  head(conversation: ConversationRef): Promise<Head>;
  /**
   * One page in sequence order (or reversed). Filters fill the page (up to a bounded read for the
   * timestamp filters). No page moves past a missing number: items of one batch land in any order.
   */
  query(conversation: ConversationRef, q: EventQuery): Promise<EventPage>;
  count(conversation: ConversationRef, q: Omit<EventQuery, 'descending' | 'limit' | 'startKey'>): Promise<number>;
}
