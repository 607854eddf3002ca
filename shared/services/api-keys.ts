import { ApiKeys } from '#shared/auth/api-keys.ts';
import { defineService } from '#shared/services.ts';
import { accounts } from '#shared/services/accounts.ts';
import { audit } from '#shared/services/audit.ts';

export const apiKeys = defineService(
  { adapters: ['keyStore'], uses: [accounts, audit] },
  (c) =>
    new ApiKeys(c.adapter('keyStore'), undefined, undefined, async (record) => {
      // Where the key lived: its owner's organization. Dated when it expired, whenever it is noticed.
      const { org } = await c.use(accounts).forUser(record.userId);
      await c
        .use(audit)
        .recordOnce(org.orgId, record.expiresAt!, `key_expired#${record.keyId}`, 'system', 'key_expired', {
          target: record.keyId,
        });
    }),
);
