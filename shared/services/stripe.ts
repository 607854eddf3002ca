import { BillingCustomers } from '#shared/billing/customers.ts';
import { StripeReporter } from '#shared/billing/stripe.ts';
import { defineService } from '#shared/services.ts';
import { audit } from '#shared/services/audit.ts';

/** The operators' mapping of organizations to Stripe customers (audited). */
export const billingCustomers = defineService(
  { adapters: ['accountStore', 'stripeStore'], uses: [audit] },
  (c) => new BillingCustomers(c.adapter('accountStore'), c.adapter('stripeStore'), c.use(audit)),
);
/** The Stripe report runs: the ledger's records, the mappings and marks, Stripe's meter event stream (null: not configured). */
export const stripeReports = defineService(
  { adapters: ['usageStore', 'stripeStore', 'stripe'] },
  (c) => new StripeReporter(c.adapter('usageStore'), c.adapter('stripeStore'), c.adapters.stripe),
);
