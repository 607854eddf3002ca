import type { Audit } from '#shared/accounts/audit.ts';
import { secretFields } from '#shared/settings/model.ts';

/**
 * The audit entries of a save: the names of the fields it named (never values), and each secret set
 * (a non-empty value) or cleared (an empty one) by name; a null keeps a secret, so it is neither.
 */
export async function auditSave(audit: Audit, orgId: string, userId: string, rawBody: unknown): Promise<void> {
  if (!rawBody || typeof rawBody !== 'object') return;
  const named = Object.keys(rawBody as Record<string, unknown>);
  const secrets = new Set<string>(secretFields);
  const plain = named.filter((f) => !secrets.has(f));
  if (plain.length) await audit.record(orgId, userId, 'settings_saved', { fields: plain });
  for (const f of named.filter((n) => secrets.has(n))) {
    const value = (rawBody as Record<string, unknown>)[f];
    if (value === null || value === undefined) continue;
    await audit.record(orgId, userId, value === '' ? 'secret_cleared' : 'secret_set', { fields: [f] });
  }
}
