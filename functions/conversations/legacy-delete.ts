import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('legacyDeleteConversation', ({ userId, params }, { conversations }) => conversations.remove(userId, params.conversation_id));
export const handler = awsHandler(operation);
