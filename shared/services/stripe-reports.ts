import { StripeReporter } from '#shared/billing/stripe.ts';
import { defineService } from '#shared/services.ts';

/** The Stripe report runs: the ledger's records, the mappings and marks, Stripe's meter event stream (null: not configured). */
export const stripeReports = defineService(
  { adapters: ['usageStore', 'stripeStore', 'stripe'] },
  (c) => new StripeReporter(c.adapter('usageStore'), c.adapter('stripeStore'), c.adapters.stripe),
);
