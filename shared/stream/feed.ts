import type { ConversationRef } from '#shared/events/event-store.ts';

/**
 * Where the ingest path says that a conversation's events are committed up to `lastSeq` (events
 * 1..lastSeq all stored). `ConversationBridge.postEvents` calls it after `EventStore.append` with
 * the committed end it read back. Adapters deliver to connected clients following one rule: per
 * connection, events go out in sequence order, each exactly once, never past the committed end,
 * read from the store (a notification is a hint to read, never the data).
 * Adapters: `noEventFeed` (functions with no stream), `LocalEventHub` (the local gateway's
 * WebSocket, shared/stream/local-event-hub.ts), the PostToConnection adapter on AWS.
 */
export interface EventFeed {
  committed(conversation: ConversationRef, lastSeq: number): Promise<void>;
}

/** No stream: nothing to tell. */
export const noEventFeed: EventFeed = { committed: async () => {} };
