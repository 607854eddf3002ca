import { requireEnv } from '#shared/env.ts';
import { ApiGatewayConnectionPush } from '#shared/stream/api-gateway-push.ts';
import { DynamoConnectionStore } from '#shared/stream/dynamo-connection-store.ts';
import { DynamoStreamTicketStore } from '#shared/stream/dynamo-ticket-store.ts';
import { PushDelivery } from '#shared/stream/push-delivery.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** Stream tickets, in the keys table. */
export const streamTicketStore: Builder<'streamTicketStore'> = () => new DynamoStreamTicketStore();
/** The WebSocket API's connections (the streamConnections table). */
export const streamConnectionStore: Builder<'streamConnectionStore'> = () => new DynamoConnectionStore();
/** PostToConnection on the stream API's stage. */
export const streamPush: Builder<'streamPush'> = () =>
  new ApiGatewayConnectionPush(requireEnv('STREAM_CALLBACK_URL', "the stream API stage's @connections endpoint"));
/** The feed the ingest function tells: PostToConnection to the conversation's open connections. */
export const eventFeed: Builder<'eventFeed'> = (get) =>
  new PushDelivery(get('streamConnectionStore'), get('eventStore'), get('streamPush'));
