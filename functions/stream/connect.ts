import { streamConnectFunction } from '#shared/functions.ts';
import { streamAccess } from '#shared/services/stream-access.ts';
import { connectRequestOf, socketStreamOf, type WebSocketConnectEvent } from '#shared/stream/socket-stream.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/** The WebSocket API's `$connect`: 200 opens the stream, another status refuses the handshake. */
export const handler = awsFunction(
  streamConnectFunction,
  { streamAccess },
  (event: WebSocketConnectEvent, services, adapters) =>
    socketStreamOf(services, adapters).connect(connectRequestOf(event)),
  { adapters: ['eventStore', 'streamConnectionStore', 'streamResendTrigger'] },
);
