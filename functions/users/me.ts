import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getCurrentUser', async ({ userId }, { settings }) => ({
  id: userId,
  settings: await settings.find(userId),
}));
export const handler = awsHandler(operation);
