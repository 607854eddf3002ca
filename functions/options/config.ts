import { defineOperation } from '#shared/http/operation.ts';
import { appConfig } from '#shared/options/model.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('getOptionsConfig', async () => appConfig);
export const handler = awsHandler(operation);
