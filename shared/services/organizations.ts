import { Organizations, type Offboarding } from '#shared/accounts/organizations.ts';
import { defineService } from '#shared/services.ts';
import { accounts } from '#shared/services/accounts.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { audit } from '#shared/services/audit.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/** Offboarding (keys, sandboxes, streams) is built only when a removal, a suspension or a move needs it. */
export const organizations = defineService(
  { adapters: ['accountStore', 'streamEviction', 'plans'], uses: [accounts, audit, sandboxes, apiKeys] },
  (c) => {
    // Each part built when used: accepting an invitation pauses sandboxes only (no keys, no streams to wire).
    const offboarding = lazy<Offboarding>({
      sandboxes: () => c.use(sandboxes),
      apiKeys: () => c.use(apiKeys),
      closeStreams: () => (userId: string) => c.adapter('streamEviction').evict(userId),
    });
    return new Organizations(
      c.adapter('accountStore'),
      c.use(accounts),
      c.use(audit),
      () => offboarding,
      undefined,
      () => c.adapters.plans,
    );
  },
);
