import { defineService } from '#shared/services.ts';
import { UsageService } from '#shared/usage/service.ts';

/** The usage route's reader of the ledger's totals. */
export const usage = defineService(
  { adapters: ['usageStore', 'plans', 'conversationStore'] },
  (c) =>
    new UsageService(
      c.adapter('usageStore'),
      () => c.adapters.plans,
      undefined,
      () => c.adapters.conversationStore,
    ),
);
