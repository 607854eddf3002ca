import { defineOperation } from '#shared/http/operation.ts';
import { securityAnalyzerChoices } from '#shared/settings/model.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('listSecurityAnalyzers', async () => [...securityAnalyzerChoices]);
export const handler = awsHandler(operation);
