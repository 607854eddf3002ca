import { defineOperation, Reply } from '#shared/http/operation.ts';
import { PAUSED_HEADER } from '#shared/sandboxes/model.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('startSandbox', async ({ userId, query, headers }, { sandboxes }) => {
  const { sandbox, paused } = await sandboxes.start(userId, query.sandbox_spec_id, headers.host);
  return new Reply(200, sandbox, paused.length ? { [PAUSED_HEADER]: paused.join(',') } : {});
});
export const handler = awsHandler(operation);
