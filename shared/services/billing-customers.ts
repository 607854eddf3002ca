import { BillingCustomers } from '#shared/billing/customers.ts';
import { defineService } from '#shared/services.ts';
import { audit } from '#shared/services/audit.ts';

/** The operators' mapping of organizations to Stripe customers (audited). */
export const billingCustomers = defineService(
  { adapters: ['accountStore', 'stripeStore'], uses: [audit] },
  (c) => new BillingCustomers(c.adapter('accountStore'), c.adapter('stripeStore'), c.use(audit)),
);
