import { defineOperation } from '#shared/http/operation.ts';
import { llmModels } from '#shared/options/model.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getOptionsModels', async () => llmModels());
export const handler = awsHandler(operation);
