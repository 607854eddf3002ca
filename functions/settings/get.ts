import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getSettings', ({ userId }, { settings }) => settings.get(userId));
export const handler = awsHandler(operation);
