import { defineOperation, Reply } from '#shared/http/operation.ts';
import { PAUSED_HEADER } from '#shared/sandboxes/model.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('resumeSandbox', async ({ userId, params, headers }, { sandboxes }) => {
  const { paused } = await sandboxes.resume(userId, params.sandbox_id, headers.host);
  return new Reply(200, { success: true }, paused.length ? { [PAUSED_HEADER]: paused.join(',') } : {});
});
export const handler = awsHandler(operation);
