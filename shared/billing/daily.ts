import type { ExportResult } from '#shared/billing/export.ts';
import type { StripeReport } from '#shared/billing/stripe.ts';
import type { Services } from '#shared/services.ts';
import type { DailyStorageMeter } from '#shared/usage/storage-close.ts';

/**
 * The daily run for `day`: the open storage holdings closed at midnight, its FOCUS file, then (Stripe configured) its usage to Stripe. A failure throws,
 * so the schedule's retry redoes both: the file is replaced with the same bytes, Stripe gets only what is unmarked.
 */
export async function dailyBilling(
  services: Pick<Services, 'billingExports' | 'stripeReports'>,
  stripeConfigured: boolean,
  day: string,
  /** Where snapshots exist (AWS): the storage holdings still open are recorded up to midnight first, so the day's file has them. */
  storage?: DailyStorageMeter,
): Promise<{ export: ExportResult; stripe: StripeReport | null }> {
  if (storage) await storage.closeDay();
  const file = await services.billingExports.run(day, day);
  const stripe = stripeConfigured ? await services.stripeReports.report(day, day) : null;
  return { export: file, stripe };
}
