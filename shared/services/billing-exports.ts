import { BillingExports } from '#shared/billing/export.ts';
import { defineService } from '#shared/services.ts';

/** The FOCUS export: the ledger's records by day, organizations' names, the export sink. */
export const billingExports = defineService(
  { adapters: ['usageStore', 'accountStore', 'billingExports'] },
  (c) => new BillingExports(c.adapter('usageStore'), c.adapter('accountStore'), c.adapter('billingExports')),
);
