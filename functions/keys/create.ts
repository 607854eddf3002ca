import { audit } from '#shared/services/audit.ts';
import { createKey } from '#shared/auth/operations.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(createKey, { apiKeys, idempotency, audit });
