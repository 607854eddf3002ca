import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('searchStartTasks', ({ userId, query, baseUrl }, { conversations }) =>
  conversations.searchTasks(userId, query, baseUrl),
);
export const handler = awsHandler(operation);
