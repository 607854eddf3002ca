import { createInvitation } from '#shared/accounts/operations.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(createInvitation, { organizations, idempotency });
