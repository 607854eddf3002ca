import { canvasSearchModels } from '#shared/options/operations.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(canvasSearchModels, { platformLlms });
