import { startSandbox } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { poolClaims } from '#shared/services/pool-claims.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(startSandbox, { sandboxes, idempotency, poolClaims });
