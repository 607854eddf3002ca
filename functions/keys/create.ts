import { audit } from '#shared/services/audit.ts';
import { createKey } from '#shared/auth/operations.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { auditStore } from '#shared/wiring/aws/accounts.ts';
import { idempotencyStore } from '#shared/wiring/aws/idempotency.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { keyStore } from '#shared/wiring/aws/keys.ts';

export const handler = awsRoute(
  createKey,
  { keyStore, idempotencyStore, sealer, auditStore },
  { apiKeys, idempotency, audit },
);
