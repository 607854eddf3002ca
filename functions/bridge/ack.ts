import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('sandboxCommandAck', async ({ params, headers }, { sandboxes }) => {
  await sandboxes.ackCommand(params.sandbox_id, keyFromHeaders(headers), params.seq);
  return { success: true };
});
export const handler = awsHandler(operation);
