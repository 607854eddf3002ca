import { defineService } from '#shared/services.ts';
import { UsageReconcile } from '#shared/usage/reconcile.ts';

/** The daily reconcile of the ledger's totals and the counters that can drift (its own scheduled function). */
export const usageReconcile = defineService(
  { adapters: ['usageStore', 'sandboxStore', 'conversationStore'] },
  (c) =>
    new UsageReconcile({
      usage: c.adapter('usageStore'),
      sandboxes: c.adapter('sandboxStore'),
      conversations: c.adapter('conversationStore'),
    }),
);
