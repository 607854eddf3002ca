import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { envPrices } from '#shared/usage/prices.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

export const usageStore: Builder<'usageStore'> = () => new DynamoUsageStore();
/** The deployment's prices from PRICES (the CDK context `prices`), checked when first built. */
export const prices: Builder<'prices'> = () => envPrices(process.env.PRICES);
