import { setOrgBilling } from '#shared/billing/operations.ts';
import { billingCustomers } from '#shared/services/billing-customers.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(setOrgBilling, { billingCustomers });
