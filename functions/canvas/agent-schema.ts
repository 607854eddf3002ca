import { platformLlms } from '#shared/services/platform-llms.ts';
import { canvasAgentSettingsSchema } from '#shared/settings/canvas-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(canvasAgentSettingsSchema, { platformLlms });
