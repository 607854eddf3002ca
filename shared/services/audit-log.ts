import { AuditLog } from '#shared/accounts/audit.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const auditLog: ServiceFactory<AuditLog> = (c) => new AuditLog(c.adapter('auditReader'));
