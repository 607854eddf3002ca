import { cursors } from '#shared/services/cursors.ts';
import { usage } from '#shared/services/usage.ts';
import { getUsage } from '#shared/usage/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';

export const handler = awsRoute(
  getUsage,
  { usageStore, plans, conversationStore, cursorKey, sealer },
  { usage, cursors },
);
