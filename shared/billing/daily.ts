import type { ExportResult } from '#shared/billing/export.ts';
import type { StripeReport } from '#shared/billing/stripe.ts';
import type { Services } from '#shared/services.ts';

/**
 * The daily run for `day`: its FOCUS file, then (Stripe configured) its usage to Stripe. A failure throws,
 * so the schedule's retry redoes both: the file is replaced with the same bytes, Stripe gets only what is unmarked.
 */
export async function dailyBilling(
  services: Pick<Services, 'billingExports' | 'stripeReports'>,
  stripeConfigured: boolean,
  day: string,
): Promise<{ export: ExportResult; stripe: StripeReport | null }> {
  const file = await services.billingExports.run(day, day);
  const stripe = stripeConfigured ? await services.stripeReports.report(day, day) : null;
  return { export: file, stripe };
}
