import { settings } from '#shared/services/settings.ts';
import { getCurrentUser } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getCurrentUser, { settings });
