import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('listConversations', ({ userId, query: { ids, ...search }, baseUrl }, { conversations }) =>
  ids.length ? conversations.getMany(userId, ids, baseUrl) : conversations.search(userId, search, baseUrl),
);
export const handler = awsHandler(operation);
