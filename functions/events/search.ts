import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('searchEvents', ({ userId, query }, { events }) => events.search(userId, query));
export const handler = awsHandler(operation);
