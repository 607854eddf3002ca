import { cursors } from '#shared/services/cursors.ts';
import { usage } from '#shared/services/usage.ts';
import { getUsage } from '#shared/usage/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getUsage, { usage, cursors });
