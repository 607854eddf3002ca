import { dynamoIdempotencyStore } from '#shared/store/dynamo-idempotency-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The idempotency table, for the routes declared `idempotent: true` (shared/http/idempotency.ts). */
export const idempotencyStore: Builder<'idempotencyStore'> = () => dynamoIdempotencyStore();
