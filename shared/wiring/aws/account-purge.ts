import { DynamoAccountPurgeStore } from '#shared/accounts/account-purge-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The removal of deleted accounts' data: only the usage reconcile's bundle carries it. */
export const accountPurgeStore: Builder<'accountPurgeStore'> = () => new DynamoAccountPurgeStore();
