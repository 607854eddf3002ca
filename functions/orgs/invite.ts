import { createInvitation } from '#shared/accounts/operations.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { idempotencyStore } from '#shared/wiring/aws/idempotency.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';

export const handler = awsRoute(
  createInvitation,
  { accountStore, auditStore, idempotencyStore, sealer },
  { organizations, idempotency },
);
