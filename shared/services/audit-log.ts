import { AuditLog } from '#shared/accounts/audit.ts';
import { defineService } from '#shared/services.ts';

export const auditLog = defineService({ adapters: ['auditReader'] }, (c) => new AuditLog(c.adapter('auditReader')));
