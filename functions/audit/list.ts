import { listAuditLog } from '#shared/accounts/operations.ts';
import { auditLog } from '#shared/services/audit-log.ts';
import { cursors } from '#shared/services/cursors.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(listAuditLog, { auditLog, cursors });
