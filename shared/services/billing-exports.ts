import { BillingExports } from '#shared/billing/export.ts';
import type { ServiceFactory } from '#shared/services.ts';

/** The FOCUS export: the ledger's records by day, organizations' names, the export sink. */
export const billingExports: ServiceFactory<BillingExports> = (c) =>
  new BillingExports(c.adapter('usageStore'), c.adapter('accountStore'), c.adapter('billingExports'));
