import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('revokeConversationKey', ({ userId, params }, { conversations }) => conversations.revokeKey(userId, params.conversation_id));
export const handler = awsHandler(operation);
