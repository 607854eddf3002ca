import { settings } from '#shared/services/settings.ts';
import { canvasUpdateSecret } from '#shared/settings/secrets-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(canvasUpdateSecret, { settings });
