import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('countEvents', ({ userId, query }, { events }) => events.count(userId, query));
export const handler = awsHandler(operation);
