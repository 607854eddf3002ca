import { AccountDeletion } from '#shared/accounts/deletion.ts';
import { defineService } from '#shared/services.ts';
import { accounts } from '#shared/services/accounts.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { audit } from '#shared/services/audit.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';

/** Its live work (keys, streams, sandboxes) is built only when a deletion runs. */
export const accountDeletion = defineService(
  { adapters: ['accountStore', 'streamEviction'], uses: [accounts, audit, sandboxes, apiKeys] },
  (c) =>
    new AccountDeletion(c.adapter('accountStore'), c.use(accounts), c.use(audit), () => ({
      sandboxes: c.use(sandboxes),
      apiKeys: c.use(apiKeys),
      closeStreams: (userId) => c.adapter('streamEviction').evict(userId),
    })),
);
