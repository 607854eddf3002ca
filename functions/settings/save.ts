import { audit } from '#shared/services/audit.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { settings } from '#shared/services/settings.ts';
import { saveSettings } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(saveSettings, { settings, audit, platformLlms });
