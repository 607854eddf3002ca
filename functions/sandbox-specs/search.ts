import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('searchSandboxSpecs', async ({ query }, { sandboxSpecs }) =>
  sandboxSpecs.search(query.page_id, query.limit),
);
export const handler = awsHandler(operation);
