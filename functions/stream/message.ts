import { streamMessageFunction } from '#shared/functions.ts';
import { conversationCommands } from '#shared/services/conversation-commands.ts';
import { relaySocketMessage } from '#shared/stream/socket-relay.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { streamAccess } from '#shared/services/stream-access.ts';

/** The WebSocket API's `$default`: a pending connection's auth frame, or a client's user message, relayed like `POST /api/conversations/{id}/events`. */
export const handler = awsFunction(
  streamMessageFunction,
  { conversationCommands, streamAccess },
  (event: { requestContext: { connectionId: string }; body?: string; isBase64Encoded?: boolean }, services, adapters) =>
    relaySocketMessage(
      event.requestContext.connectionId,
      event.isBase64Encoded ? '' : (event.body ?? ''),
      services,
      adapters,
    ),
  { adapters: ['eventStore', 'streamConnectionStore', 'streamPush', 'streamResendTrigger'] },
);
