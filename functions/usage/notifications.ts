import { cursors } from '#shared/services/cursors.ts';
import { usage } from '#shared/services/usage.ts';
import { listNotifications } from '#shared/usage/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(listNotifications, { usage, cursors });
