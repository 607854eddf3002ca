import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('sandboxCommands', ({ params, headers, query }, { sandboxes }) =>
  sandboxes.pollCommands(params.sandbox_id, keyFromHeaders(headers), query.wait),
);
export const handler = awsHandler(operation);
