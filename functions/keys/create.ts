import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('createKey', ({ userId, body }, { apiKeys }) => apiKeys.createOwn(userId, body.name));
export const handler = awsHandler(operation);
