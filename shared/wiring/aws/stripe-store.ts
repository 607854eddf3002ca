import { DynamoStripeStore } from '#shared/billing/dynamo-stripe-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** Stripe customer mappings and `reported` marks (table `usage`): no SDK client beyond DynamoDB's. */
export const stripeStore: Builder<'stripeStore'> = () => new DynamoStripeStore();
