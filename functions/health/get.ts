import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('health', async () => ({ status: 'ok' }));
export const handler = awsHandler(operation);
