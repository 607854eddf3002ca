import { defineOperation } from '#shared/http/operation.ts';
import { notFound } from '#shared/http/errors.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('deleteKey', async ({ userId, params }, { apiKeys }) => {
  if (!(await apiKeys.revokeOwn(userId, params.key_id))) throw notFound('Key not found');
  return { success: true };
});
export const handler = awsHandler(operation);
