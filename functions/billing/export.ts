import { previousDay } from '#shared/billing/export.ts';
import { billingExportFunction } from '#shared/functions.ts';
import { billingExports as exportsService } from '#shared/services/billing-exports.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { accountStore } from '#shared/wiring/aws/accounts.ts';
import { billingExports } from '#shared/wiring/aws/billing-exports.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';

/**
 * The daily schedule's target: the previous UTC day's ledger as a FOCUS file. The day comes from the
 * scheduled event's own `time`, so a delivery retried after midnight still writes the day it was meant for.
 */
export const handler = awsFunction(
  billingExportFunction,
  { usageStore, accountStore, billingExports },
  { billingExports: exportsService },
  async (event: { time?: string } | undefined, services) => {
    const at = event?.time ? new Date(event.time) : new Date();
    const day = previousDay(Number.isNaN(at.getTime()) ? new Date() : at);
    return services.billingExports.run(day, day);
  },
);
