import { setOrgBilling } from '#shared/billing/operations.ts';
import { billingCustomers } from '#shared/services/stripe.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { stripeStore } from '#shared/wiring/aws/stripe-store.ts';

export const handler = awsRoute(setOrgBilling, { accountStore, auditStore, stripeStore }, { billingCustomers });
