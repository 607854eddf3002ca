import { listAuditLog } from '#shared/accounts/operations.ts';
import { auditLog } from '#shared/services/audit-log.ts';
import { cursors } from '#shared/services/cursors.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { auditReader } from '#shared/wiring/aws/accounts.ts';
import { cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';

export const handler = awsRoute(listAuditLog, { auditReader, cursorKey, sealer }, { auditLog, cursors });
