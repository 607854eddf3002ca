import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('searchSandboxes', ({ userId, query }, { sandboxes }) =>
  sandboxes.search(userId, query.page_id, query.limit),
);
export const handler = awsHandler(operation);
