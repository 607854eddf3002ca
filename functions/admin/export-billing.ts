import { exportBilling } from '#shared/billing/operations.ts';
import { billingExports as exportsService } from '#shared/services/billing-exports.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore } from '#shared/wiring/aws/accounts.ts';
import { billingExports } from '#shared/wiring/aws/billing-exports.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(
  exportBilling,
  { usageStore, accountStore, billingExports },
  { billingExports: exportsService },
);
