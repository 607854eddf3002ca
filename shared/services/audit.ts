import { Audit } from '#shared/accounts/audit.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const audit: ServiceFactory<Audit> = (c) => new Audit(c.adapter('auditStore'));
