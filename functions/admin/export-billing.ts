import { exportBilling } from '#shared/billing/operations.ts';
import { billingExports as exportsService } from '#shared/services/billing-exports.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(exportBilling, { billingExports: exportsService });
