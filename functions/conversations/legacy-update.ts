import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('legacyUpdateConversation', ({ userId, params, body }, { conversations }) =>
  conversations.rename(userId, params.conversation_id, body.title),
);
export const handler = awsHandler(operation);
