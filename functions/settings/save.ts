import { saveSettings } from '#shared/settings/operations.ts';
import { awsRoute, sealer, settingsStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(saveSettings, { settingsStore, sealer });
