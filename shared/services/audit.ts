import { Audit } from '#shared/accounts/audit.ts';
import { defineService } from '#shared/services.ts';

export const audit = defineService({ adapters: ['auditStore'] }, (c) => new Audit(c.adapter('auditStore')));
