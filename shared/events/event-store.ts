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
   * as the caller read it just before (e.g. beside another read), and saves this call that read.
   */
  append(
    conversation: ConversationRef,
    firstSeq: number,
    events: AgentEventEnvelope[],
    committed?: number,
  ): Promise<Appended>;
  /** The committed end: events 1..n are all stored (a read, whatever the conversation's size). */
  lastSeq(conversation: ConversationRef): Promise<number>;
  /**
   * One page in sequence order (or reversed). Filters fill the page (up to a bounded read for the
   * timestamp filters). No page moves past a missing number: items of one batch land in any order.
   */
  query(conversation: ConversationRef, q: EventQuery): Promise<EventPage>;
  count(conversation: ConversationRef, q: Omit<EventQuery, 'descending' | 'limit' | 'startKey'>): Promise<number>;
}
