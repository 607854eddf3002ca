import { canvasSearchModels } from '#shared/options/operations.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { platformModels } from '#shared/wiring/aws/llm.ts';

export const handler = awsRoute(canvasSearchModels, { platformModels }, { platformLlms });
