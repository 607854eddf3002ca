import type { ConversationRecord, StartTaskRecord } from '#shared/conversations/model.ts';
import type { StartTaskStatus } from '#shared/protocol.ts';
import type { Page } from '#shared/store/query.ts';

export interface ConversationFilter {
  titleContains?: string;
  createdGte?: string;
  createdLt?: string;
  updatedGte?: string;
  updatedLt?: string;
  repository?: string;
  trigger?: string;
}

/**
 * Conversations, identified by (user, id): ids are unique per user only, so every read and write
 * names the user. Adapters: `DynamoConversationStore`.
 */
export interface ConversationStore {
  /**
   * False when the user already has (or had) a conversation with this id; counted once when true.
   * With `maxConversations`, a slot is taken in the user's count first, conditionally: at the limit
   * nothing is written and `ConversationLimitError` is thrown (racing creates cannot pass it).
   */
  create(record: ConversationRecord, maxConversations?: number): Promise<boolean>;
  get(userId: string, id: string): Promise<ConversationRecord | undefined>;
  getMany(userId: string, ids: string[]): Promise<Map<string, ConversationRecord>>;
  /** A user's conversations, newest first. */
  list(
    userId: string,
    filter: ConversationFilter,
    limit: number,
    startKey?: Record<string, unknown>,
  ): Promise<Page<ConversationRecord>>;
  /** O(1) without a filter (a per-user counter kept by `create` and `delete`); a filter counts its matches. */
  count(userId: string, filter: ConversationFilter): Promise<number>;
  /** Applies `changes` if the stored version is still `version`; false otherwise. */
  update(userId: string, id: string, version: number, changes: Partial<ConversationRecord>): Promise<boolean>;
  /** Removes the record for every reader (counted once however often it runs); the user's id stays taken (its events are still stored). */
  delete(userId: string, id: string): Promise<void>;
  /** The users whose counter exists, a page at a time (index `counters`: the daily reconcile). */
  counterUsers(): AsyncIterable<string[]>;
  /**
   * The user's counter as stored (strongly consistent) and the live conversations counted from the
   * table itself (strongly consistent, a page at a time); `counter` undefined when it has not started.
   */
  recount(userId: string): Promise<{ counter?: ConversationCounter; live: number }>;
  /** Sets the counter to `value` if it is still as `seen`; false when a create or delete changed it meanwhile. */
  setCount(userId: string, seen: ConversationCounter, value: number): Promise<boolean>;
}

/** Conversation start tasks. Adapters: `DynamoStartTaskStore`. */
export interface StartTaskStore {
  create(record: StartTaskRecord): Promise<void>;
  get(id: string): Promise<StartTaskRecord | undefined>;
  getMany(ids: string[]): Promise<Map<string, StartTaskRecord>>;
  list(
    userId: string,
    options: {
      conversationId?: string;
      createdGte?: string;
      descending: boolean;
      limit: number;
      startKey?: Record<string, unknown>;
    },
  ): Promise<Page<StartTaskRecord>>;
  /**
   * Moves the task to `status` only if it is currently in one of `from` (so reports are idempotent
   * and can only move a task forward). False if it was not.
   */
  transition(
    id: string,
    from: readonly StartTaskStatus[],
    status: StartTaskStatus,
    changes: { detail?: string | null; sandbox_id?: string | null },
  ): Promise<boolean>;
  /** Unfinished tasks last updated before `before`, oldest first. */
  stalled(before: string, limit: number): Promise<StartTaskRecord[]>;
}

/** A user's conversation counter as read (`changedAt`: its last change; absent on old items). */
export interface ConversationCounter {
  conversations: number;
  changedAt?: string;
}

/** The user's count of conversations is at `limit` (the plan's `max_conversations`). */
export class ConversationLimitError extends Error {
  constructor(
    readonly limit: number,
    readonly used: number,
  ) {
    super(`${used} conversations of at most ${limit}`);
  }
}
