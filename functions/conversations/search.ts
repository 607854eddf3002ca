import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('searchConversations', ({ userId, query, baseUrl }, { conversations }) =>
  conversations.search(userId, query, baseUrl),
);
export const handler = awsHandler(operation);
