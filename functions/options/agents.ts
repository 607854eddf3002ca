import { defineOperation } from '#shared/http/operation.ts';
import { agentChoices } from '#shared/settings/model.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('listAgents', async () => [...agentChoices]);
export const handler = awsHandler(operation);
