import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getSandboxes', ({ userId, query }, { sandboxes }) => sandboxes.batchGet(userId, query.id));
export const handler = awsHandler(operation);
