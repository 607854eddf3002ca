import { streamMessageFunction } from '#shared/functions.ts';
import { conversations } from '#shared/services/conversations.ts';
import { relaySocketMessage } from '#shared/stream/socket-relay.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { streamConnectionStore } from '#shared/wiring/aws/stream.ts';

/** The WebSocket API's `$default`: a client's user message, relayed like `POST /api/conversations/{id}/events`. */
export const handler = awsFunction(
  streamMessageFunction,
  { conversationStore, sandboxStore, commandPush, sandboxConfig, streamConnectionStore },
  { conversations },
  (event: { requestContext: { connectionId: string }; body?: string; isBase64Encoded?: boolean }, services, adapters) =>
    relaySocketMessage(
      event.requestContext.connectionId,
      event.isBase64Encoded ? '' : (event.body ?? ''),
      services,
      adapters,
    ),
);
