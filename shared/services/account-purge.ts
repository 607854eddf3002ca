import { AccountPurge } from '#shared/accounts/deletion.ts';
import { defineService } from '#shared/services.ts';

/** The daily removal of a deleted account's data (the usage reconcile's function). */
export const accountPurge = defineService(
  { adapters: ['accountPurgeStore'] },
  (c) => new AccountPurge(c.adapter('accountPurgeStore')),
);
