import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('postEvents', ({ params, headers, body }, { conversationBridge }) =>
  conversationBridge.postEvents(params.sandbox_id, headers['x-session-api-key'], params.conversation_id, body),
);
export const handler = awsHandler(operation);
