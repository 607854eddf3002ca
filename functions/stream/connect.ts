import { streamConnectFunction } from '#shared/functions.ts';
import { streamAccess } from '#shared/services/stream-access.ts';
import { connectRequestOf, socketStreamOf, type WebSocketConnectEvent } from '#shared/stream/socket-stream.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { accountStore, auditStore, oidc } from '#shared/wiring/aws/accounts.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { conversationKeySecret, keyStore, sessionStore } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { streamConnectionStore, streamTicketStore } from '#shared/wiring/aws/stream.ts';
import { streamResendTrigger } from '#shared/wiring/aws/stream-resend.ts';

/** The WebSocket API's `$connect`: 200 opens the stream, another status refuses the handshake. */
export const handler = awsFunction(
  streamConnectFunction,
  {
    keyStore,
    sessionStore,
    conversationKeySecret,
    sealer,
    conversationStore,
    eventStore,
    streamTicketStore,
    streamConnectionStore,
    streamResendTrigger,
    plans,
    accountStore,
    auditStore,
    oidc,
  },
  { streamAccess },
  (event: WebSocketConnectEvent, services, adapters) =>
    socketStreamOf(services, adapters).connect(connectRequestOf(event)),
);
