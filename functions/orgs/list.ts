import { organizationsList } from '#shared/accounts/operations.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore } from '#shared/wiring/aws/accounts.ts';

export const handler = awsRoute(organizationsList, { accountStore }, { organizations });
