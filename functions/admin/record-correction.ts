import { credits } from '#shared/services/credits.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { recordCorrection } from '#shared/usage/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { idempotencyStore } from '#shared/wiring/aws/idempotency.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(
  recordCorrection,
  { accountStore, auditStore, usageStore, plans, idempotencyStore, sealer },
  { credits, idempotency },
);
