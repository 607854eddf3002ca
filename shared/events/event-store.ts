import type { AgentEventEnvelope } from '#shared/events/model.ts';

export interface EventQuery {
  kind?: string;
  timestampGte?: string;
  timestampLt?: string;
  descending: boolean;
  limit: number;
  startKey?: Record<string, unknown>;
}

export interface EventPage {
  items: AgentEventEnvelope[];
  /** Where the next page starts; absent when the store has nothing more now. */
  lastKey?: Record<string, unknown>;
  /** The key of the last item returned, for following a conversation as it grows. */
  tailKey?: Record<string, unknown>;
}

/** Which conversation: ids are unique per user only, so the user is part of the identity. */
export interface ConversationRef {
  userId: string;
  conversationId: string;
}

/** A conversation's events in arrival order. Adapters: `DynamoEventStore`. */
export interface EventStore {
  /**
   * Appends events in the given order. Idempotent by event id: an event already stored (by an
   * earlier, possibly half-finished attempt) keeps its first position. Returns how many were new.
   */
  append(conversation: ConversationRef, events: AgentEventEnvelope[]): Promise<number>;
  /** One page, in arrival order (or reversed); filters apply within the page, as DynamoDB filters do. */
  query(conversation: ConversationRef, q: EventQuery): Promise<EventPage>;
  count(conversation: ConversationRef, q: Omit<EventQuery, 'descending' | 'limit' | 'startKey'>): Promise<number>;
}
