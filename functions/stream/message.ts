import { streamMessageFunction } from '#shared/functions.ts';
import { conversations } from '#shared/services/conversations.ts';
import { relaySocketMessage } from '#shared/stream/socket-relay.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { accountStore, auditStore, oidc } from '#shared/wiring/aws/accounts.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { streamConnectionStore, streamPush, streamTicketStore } from '#shared/wiring/aws/stream.ts';
import { streamAccess } from '#shared/services/stream-access.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { conversationKeySecret, keyStore, sessionStore } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { streamResendTrigger } from '#shared/wiring/aws/stream-resend.ts';

/** The WebSocket API's `$default`: a pending connection's auth frame, or a client's user message, relayed like `POST /api/conversations/{id}/events`. */
export const handler = awsFunction(
  streamMessageFunction,
  {
    conversationStore,
    sandboxStore,
    commandPush,
    sandboxConfig,
    streamConnectionStore,
    keyStore,
    sessionStore,
    conversationKeySecret,
    sealer,
    eventStore,
    streamTicketStore,
    streamResendTrigger,
    streamPush,
    plans,
    accountStore,
    auditStore,
    oidc,
  },
  { conversations, streamAccess },
  (event: { requestContext: { connectionId: string }; body?: string; isBase64Encoded?: boolean }, services, adapters) =>
    relaySocketMessage(
      event.requestContext.connectionId,
      event.isBase64Encoded ? '' : (event.body ?? ''),
      services,
      adapters,
    ),
);
