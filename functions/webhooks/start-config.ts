import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getStartConfig', ({ params, headers }, { conversationBridge }) =>
  conversationBridge.startConfig(params.sandbox_id, headers['x-session-api-key'], params.conversation_id),
);
export const handler = awsHandler(operation);
