import { reportStripeUsage } from '#shared/billing/operations.ts';
import { stripeReports } from '#shared/services/stripe.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { stripe } from '#shared/wiring/aws/stripe.ts';
import { stripeStore } from '#shared/wiring/aws/stripe-store.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(reportStripeUsage, { usageStore, stripeStore, stripe }, { stripeReports });
