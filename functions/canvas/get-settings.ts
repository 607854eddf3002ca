import { settings } from '#shared/services/settings.ts';
import { canvasGetSettings } from '#shared/settings/canvas-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(canvasGetSettings, { settings });
