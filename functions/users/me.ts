import { getCurrentUser } from '#shared/settings/operations.ts';
import { awsRoute, settingsStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getCurrentUser, { settingsStore });
