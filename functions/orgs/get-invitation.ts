import { getInvitation } from '#shared/accounts/operations.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getInvitation, { organizations });
