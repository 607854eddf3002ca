import { DynamoStreamTicketStore } from '#shared/stream/dynamo-ticket-store.ts';
import { noEventFeed } from '#shared/stream/feed.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** Stream tickets, in the keys table. */
export const streamTicketStore: Builder<'streamTicketStore'> = () => new DynamoStreamTicketStore();
/** The feed the ingest function tells: none until the WebSocket API's PostToConnection adapter replaces it. */
export const eventFeed: Builder<'eventFeed'> = () => noEventFeed;
