import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('countConversations', ({ userId, query }, { conversations }) => conversations.count(userId, query));
export const handler = awsHandler(operation);
