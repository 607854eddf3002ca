import { adminListUsers } from '#shared/accounts/operations.ts';
import { cursors } from '#shared/services/cursors.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';

export const handler = awsRoute(
  adminListUsers,
  { accountStore, auditStore, cursorKey, sealer },
  { organizations, cursors },
);
