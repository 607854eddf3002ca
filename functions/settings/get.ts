import { settings } from '#shared/services/settings.ts';
import { getSettings } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(getSettings, { settingsStore }, { settings });
