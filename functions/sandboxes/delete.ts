import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('deleteSandbox', async ({ userId, params }, { sandboxes }) => {
  await sandboxes.delete(userId, params.sandbox_id);
  return { success: true };
});
export const handler = awsHandler(operation);
