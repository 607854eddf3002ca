import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('listKeys', ({ userId }, { apiKeys }) => apiKeys.listActive(userId));
export const handler = awsHandler(operation);
