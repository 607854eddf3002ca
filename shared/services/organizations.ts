import { Organizations } from '#shared/accounts/organizations.ts';
import { defineService } from '#shared/services.ts';
import { accounts } from '#shared/services/accounts.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { audit } from '#shared/services/audit.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';

/** Offboarding (keys, sandboxes, streams) is built only when a removal, a suspension or a move needs it. */
export const organizations = defineService(
  { adapters: ['accountStore', 'streamEviction', 'plans'], uses: [accounts, audit, sandboxes, apiKeys] },
  (c) =>
    new Organizations(
      c.adapter('accountStore'),
      c.use(accounts),
      c.use(audit),
      // Each part built when used: accepting an invitation pauses sandboxes only (no keys, no streams to wire).
      () => ({
        get sandboxes() {
          return c.use(sandboxes);
        },
        get apiKeys() {
          return c.use(apiKeys);
        },
        closeStreams: (userId) => c.adapter('streamEviction').evict(userId),
      }),
      undefined,
      () => c.adapters.plans,
    ),
);
