import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('legacyGetConversation', ({ userId, params, baseUrl }, { conversations }) =>
  conversations.legacyGet(userId, params.conversation_id, baseUrl),
);
export const handler = awsHandler(operation);
