import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getSandboxSpecs', async ({ query }, { sandboxSpecs }) => sandboxSpecs.batchGet(query.id));
export const handler = awsHandler(operation);
