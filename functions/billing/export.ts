import { dailyBilling } from '#shared/billing/daily.ts';
import { previousDay } from '#shared/billing/export.ts';
import { billingExportFunction } from '#shared/functions.ts';
import { billingExports as exportsService } from '#shared/services/billing-exports.ts';
import { stripeReports } from '#shared/services/stripe-reports.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { DailyStorageMeter } from '#shared/usage/storage-close.ts';
import { dynamoStorageHoldings } from '#shared/usage/dynamo-storage-holdings.ts';

/**
 * The daily schedule's target: the storage holdings closed at midnight, the previous UTC day's ledger as a FOCUS
 * file, then to Stripe when configured.
 * The day comes from the scheduled event's own `time`, so a delivery retried after midnight still does its day.
 */
export const handler = awsFunction(
  billingExportFunction,
  { billingExports: exportsService, stripeReports },
  async (event: { time?: string } | undefined, services, adapters) => {
    const at = event?.time ? new Date(event.time) : new Date();
    const day = previousDay(Number.isNaN(at.getTime()) ? new Date() : at);
    const storage = new DailyStorageMeter(adapters.usageStore, adapters.prices, dynamoStorageHoldings);
    const out = await dailyBilling(services, adapters.stripe !== null, day, storage);
    // The export's answer as before (what the schedule's tests read), the Stripe report beside it.
    return { ...out.export, stripe: out.stripe };
  },
  { adapters: ['prices'] },
);
