import { Accounts } from '#shared/accounts/accounts.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { audit } from '#shared/services/audit.ts';

export const accounts: ServiceFactory<Accounts> = (c) => new Accounts(c.adapter('accountStore'), c.use(audit));
