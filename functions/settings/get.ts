import { getSettings } from '#shared/settings/operations.ts';
import { awsRoute, settingsStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getSettings, { settingsStore });
