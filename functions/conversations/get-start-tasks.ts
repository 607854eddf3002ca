import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getStartTasks', ({ userId, query, baseUrl }, { conversations }) =>
  conversations.getTasks(userId, query.ids, baseUrl),
);
export const handler = awsHandler(operation);
