import type { ServiceFactory } from '#shared/services.ts';
import { UsageService } from '#shared/usage/service.ts';

/** The usage route's reader of the ledger's totals. */
export const usage: ServiceFactory<UsageService> = (c) =>
  new UsageService(
    c.adapter('usageStore'),
    () => c.adapters.plans,
    undefined,
    () => c.adapters.conversationStore,
  );
