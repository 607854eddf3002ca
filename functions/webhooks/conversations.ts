import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('reportConversation', ({ params, headers, body }, { conversationBridge }) =>
  conversationBridge.report(params.sandbox_id, headers['x-session-api-key'], body),
);
export const handler = awsHandler(operation);
