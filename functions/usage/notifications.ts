import { cursors } from '#shared/services/cursors.ts';
import { usage } from '#shared/services/usage.ts';
import { listNotifications } from '#shared/usage/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(listNotifications, { usageStore, cursorKey, sealer }, { usage, cursors });
