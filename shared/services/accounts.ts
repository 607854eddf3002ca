import { Accounts } from '#shared/accounts/accounts.ts';
import { defineService } from '#shared/services.ts';
import { audit } from '#shared/services/audit.ts';

export const accounts = defineService(
  { adapters: ['accountStore'], uses: [audit] },
  (c) => new Accounts(c.adapter('accountStore'), c.use(audit)),
);
