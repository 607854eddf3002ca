import { randomBytes } from 'node:crypto';
import type { AuditReader, AuditStore } from '#shared/accounts/account-store.ts';
import { auditRetentionDays } from '#shared/accounts/config.ts';
import { isConditionFailure } from '#shared/store/dynamo.ts';
import type { AuditAction, AuditEntry } from '#shared/accounts/model.ts';

/** What an entry may say besides who and what: names and ids, never values. */
export interface AuditNote {
  target?: string;
  /** Names of the fields changed (settings saved: the field names only). */
  fields?: string[];
  detail?: string;
}

/** Writes the append-only audit log (one PutItem per entry, never over another). */
export class Audit {
  constructor(
    private readonly store: AuditStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async record(orgId: string, actor: string, action: AuditAction, note: AuditNote = {}): Promise<void> {
    await this.store.append(
      this.entry(orgId, this.now().toISOString(), `${randomBytes(6).toString('hex')}`, actor, action, note),
    );
  }

  /**
   * An entry of something that happened once at `at` (a key's expiry), named `once` among that
   * instant's entries: written by whichever process notices first, and never twice (the append's
   * condition refuses the second).
   */
  async recordOnce(
    orgId: string,
    at: string,
    once: string,
    actor: string,
    action: AuditAction,
    note: AuditNote = {},
  ): Promise<void> {
    try {
      await this.store.append(this.entry(orgId, at, once, actor, action, note));
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }

  private entry(
    orgId: string,
    at: string,
    suffix: string,
    actor: string,
    action: AuditAction,
    note: AuditNote,
  ): AuditEntry {
    const now = this.now();
    return {
      orgId,
      entryId: `${at}#${suffix}`,
      at,
      actor,
      action,
      ...(note.target ? { target: note.target } : {}),
      ...(note.fields?.length ? { fields: [...note.fields].sort() } : {}),
      ...(note.detail ? { detail: note.detail } : {}),
      expiresAtEpoch: Math.ceil(now.getTime() / 1000) + auditRetentionDays() * 86_400,
    };
  }
}

/** An entry as `GET /api/v1/audit-log` shows it. */
export const auditView = (e: AuditEntry) => ({
  id: e.entryId,
  org_id: e.orgId,
  at: e.at,
  actor: e.actor,
  action: e.action,
  target: e.target ?? null,
  fields: e.fields ?? [],
  detail: e.detail ?? null,
});

export class AuditLog {
  constructor(private readonly reader: AuditReader) {}

  list(orgId: string, limit: number, after?: Record<string, unknown>) {
    return this.reader.list(orgId, limit, after);
  }
}
