import { adminListOrgs } from '#shared/accounts/operations.ts';
import { cursors } from '#shared/services/cursors.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(adminListOrgs, { organizations, cursors });
