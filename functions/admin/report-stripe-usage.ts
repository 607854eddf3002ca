import { reportStripeUsage } from '#shared/billing/operations.ts';
import { stripeReports } from '#shared/services/stripe-reports.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(reportStripeUsage, { stripeReports });
