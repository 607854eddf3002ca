import { DynamoPoolStore } from '#shared/sandboxes/dynamo-pool-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

export const poolStore: Builder<'poolStore'> = () => new DynamoPoolStore();
