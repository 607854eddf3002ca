import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('pauseConversation', ({ userId, params }, { conversations }) =>
  conversations.command(userId, params.conversation_id, (id) => ({ type: 'pause_conversation', conversation_id: id })),
);
export const handler = awsHandler(operation);
