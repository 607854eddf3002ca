import { audit } from '#shared/services/audit.ts';
import { settings } from '#shared/services/settings.ts';
import { canvasSaveSettings } from '#shared/settings/canvas-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(canvasSaveSettings, { settings, audit });
