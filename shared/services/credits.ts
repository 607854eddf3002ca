import { defineService } from '#shared/services.ts';
import { audit } from '#shared/services/audit.ts';
import { Credits } from '#shared/usage/credits.ts';

/** Operators' grants of prepaid credits. */
export const credits = defineService(
  { adapters: ['usageStore', 'accountStore', 'plans'], uses: [audit] },
  (c) =>
    new Credits({
      store: c.adapter('usageStore'),
      accounts: c.adapter('accountStore'),
      audit: c.use(audit),
      plans: () => c.adapters.plans,
    }),
);
