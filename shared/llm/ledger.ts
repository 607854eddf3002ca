import type { LlmTokens } from '#shared/llm/cost.ts';
import type { SealedAnswer } from '#shared/llm/replay.ts';
import type { DayTotals } from '#shared/usage/usage-store.ts';

/**
 * One upstream call of the LLM gateway, as the ledger keeps it (table `usage`, pk `llm#<request id>`):
 * authoritative (counted by us from the upstream's own usage), never edited. `estimated`: a stream
 * cut before the upstream reported usage, charged from what was streamed.
 */
export interface LlmRecord extends LlmTokens {
  requestId: string;
  orgId: string;
  userId: string;
  conversationId: string;
  /** The public model name, and the upstream model it was served by. */
  model: string;
  upstreamModel: string;
  costMicroUsd: number;
  /** The prices it was charged at (USD per million tokens) and the markup, as the file said then. */
  price: { input: number; output: number; cached_input?: number; cache_write_input?: number; markup: number };
  estimated: boolean;
  /** The UTC day of the call: the day whose totals it adds to. */
  day: string;
  at: string;
}

/** Why a reservation was refused, with what is used of the limit (micro-USD, or calls for `concurrency`). */
export type ReserveRefusal = { refused: 'monthly_spend_usd' | 'max_budget_per_task' | 'concurrency'; used: number };

export interface Reservation {
  /** The call's request id: names the reservation among the open ones (one call, one reservation). */
  requestId: string;
  orgId: string;
  /** `YYYY-MM` (UTC): the month whose committed spend holds the reservation. */
  month: string;
  conversationId: string;
  microUsd: number;
  /** Whether it is also held against the conversation's budget (only a conversation with a budget keeps a counter). */
  conversationBudget: boolean;
  /**
   * Epoch seconds after which a reservation still open is taken for leaked (its gateway died before
   * settling) and released by the next call it stands in the way of; a settle after that adds the cost.
   */
  expiresAtEpoch: number;
}

/**
 * The gateway's ledger: conditional counters that hold under racing calls (no transactions: dynalite
 * has none, and none is needed), the records and their totals.
 */
export interface LlmLedger {
  /**
   * Reserves `r.microUsd` against the organization's month (committed LLM spend + reservations at
   * most `orgMaxMicroUsd`, calls in flight below `concurrency`) and, with `r.conversationBudget`, the
   * conversation's budget (its committed spend at most `conversationMaxMicroUsd`). All or nothing.
   * Before refusing, releases the open reservations that expired (leaked: their settle never came).
   */
  reserve(
    r: Reservation,
    limits: { orgMaxMicroUsd: number; concurrency: number; conversationMaxMicroUsd: number | null },
  ): Promise<ReserveRefusal | null>;
  /**
   * Replaces the reservation by the actual cost (0 for an uncharged call) and ends the call in flight;
   * if it was released meanwhile as leaked, adds the actual cost alone. Either way exact, counted once.
   */
  settle(r: Reservation, actualMicroUsd: number): Promise<void>;
  /** The organization's committed LLM spend this month (settled and reserved), micro-USD. */
  committed(orgId: string, month: string): Promise<number>;
  /**
   * Puts the record if its request id is new, then adds it to the day totals; undefined for a repeat,
   * else the organization's day totals as its ADD left them (who crosses a threshold: shared/usage/alerts.ts).
   */
  record(rec: LlmRecord): Promise<DayTotals | undefined>;
  /** Counts a request in the organization's minute; the refusal says which limit, else null. */
  takeRate(
    orgId: string,
    minute: number,
    limits: { requests: number; tokens: number },
  ): Promise<'llm_requests_per_minute' | 'llm_tokens_per_minute' | null>;
  /** Adds a call's tokens to its organization's minute. */
  addRateTokens(orgId: string, minute: number, tokens: number): Promise<void>;
  /**
   * Claims an Idempotency-Key of a conversation for a call (a conditional put: of racing calls with
   * the same key, one claims it); null when claimed, else the key's call as it stands. A key is free again
   * once it expired, and a claim in progress once its `inProgressUntil` passed (its gateway died).
   */
  claimIdempotencyKey(conversationId: string, key: string, claim: IdempotencyClaim): Promise<IdempotentCall | null>;
  /** The claiming call completed: its sealed answer is kept (or, too large, only that it completed). */
  completeIdempotencyKey(
    conversationId: string,
    key: string,
    requestId: string,
    answer: SealedAnswer | 'too_large',
  ): Promise<void>;
  /** The claiming call kept nothing (refused, failed upstream, cut): the key is free for a repeat to run again. */
  releaseIdempotencyKey(conversationId: string, key: string, requestId: string): Promise<void>;
  /** The records of a conversation's calls are not indexed; tests read one by request id. */
  get(requestId: string): Promise<LlmRecord | undefined>;
}

/** A call claiming an Idempotency-Key. */
export interface IdempotencyClaim {
  requestId: string;
  /** `requestHash` of its path and body: a repeat with another body is refused. */
  requestHash: string;
  /** Epoch seconds after which a claim still in progress is taken for dead. */
  inProgressUntil: number;
  /** Epoch seconds after which the key is forgotten (24 hours). */
  expiresAtEpoch: number;
}

/** The call an Idempotency-Key was claimed by, as it stands. */
export interface IdempotentCall {
  requestId: string;
  requestHash: string;
  state: 'in_progress' | 'completed' | 'too_large';
  /** `completed`: the answer as it was sent, sealed. */
  answer?: SealedAnswer;
}
