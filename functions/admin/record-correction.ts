import { credits } from '#shared/services/credits.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { recordCorrection } from '#shared/usage/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(recordCorrection, { credits, idempotency });
