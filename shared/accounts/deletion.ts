import type { AccountStore } from '#shared/accounts/account-store.ts';
import type { AccountPurgeStore } from '#shared/accounts/account-purge-store.ts';
import type { Accounts } from '#shared/accounts/accounts.ts';
import type { Audit } from '#shared/accounts/audit.ts';
import type { Caller } from '#shared/accounts/organizations.ts';
import type { ApiKeys } from '#shared/auth/api-keys.ts';
import { conflict, invalidField, notFound } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';

export const LAST_OWNER_DELETE =
  'You are the last owner of an organization with other members: make another member an owner first (or remove them)';

/** What deleting an account does at once to the person's live work. */
export interface DeletionWork {
  sandboxes: Pick<SandboxService, 'deleteAll'>;
  apiKeys: Pick<ApiKeys, 'list' | 'revoke'>;
  closeStreams: (userId: string) => Promise<void>;
}

/**
 * `DELETE /api/v1/users/me` (docs/sign-in.md, "Export and deletion"). At once, in the request: the
 * user record becomes a tombstone (`status` deleted: every key, cookie, token and conversation key of
 * theirs is refused from the next request, `credentialsNotBefore` now), their keys are revoked, their
 * streams closed, their sandboxes deleted (stopped, workspaces and snapshots removed), their
 * organization closed if they were its only member, and `account_deleted` audited. Their stored data
 * (conversations, events, start tasks, key items, settings and secrets) is removed afterwards by the
 * daily reconcile's function (`AccountPurge`), a bounded amount a run, since it can be large (principle 8).
 */
export class AccountDeletion {
  constructor(
    private readonly store: AccountStore,
    private readonly accounts: Accounts,
    private readonly audit: Audit,
    private readonly work: () => DeletionWork,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async request(caller: Caller, confirm: string) {
    if (confirm !== caller.userId)
      throw invalidField(
        ['body', 'confirm'],
        'confirm must be your own user id (as GET /api/v1/users/me shows it)',
        confirm,
      );
    const user = await this.store.getUser(caller.userId);
    if (!user || user.status === 'deleted') throw notFound('User not found');
    const org = await this.store.getOrg(user.orgId);
    const others = (await this.store.listMembers(user.orgId)).filter(
      (m) => m.userId !== user.userId && m.status !== 'deleted',
    );
    // The last owner of an organization with other members stays (the rule of leaving).
    const ownerLeaves = user.role === 'owner' && others.length > 0;
    if (ownerLeaves && !(await this.store.adjustOwners(user.orgId, -1, 1))) throw conflict(LAST_OWNER_DELETE);
    const at = this.now().toISOString();
    if (
      !(await this.store.replaceUser({
        ...user,
        status: 'deleted',
        deletedAt: at,
        credentialsNotBefore: at,
        updatedAt: at,
      }))
    ) {
      if (ownerLeaves) await this.store.adjustOwners(user.orgId, 1, 1);
      throw conflict('Your account changed meanwhile; try again');
    }
    this.accounts.forget(user.userId);
    if (org && others.length === 0 && org.status !== 'closed')
      await this.store.replaceOrg({ ...org, status: 'closed', owners: 0, updatedAt: at });
    // Kept with the organization (usage records stay there for billing): who deleted their account, when.
    await this.audit.record(user.orgId, user.userId, 'account_deleted', { target: user.userId });
    const work = this.work();
    for (const k of await work.apiKeys.list(user.userId)) if (!k.revokedAt) await work.apiKeys.revoke(k.keyId);
    await work.closeStreams(user.userId);
    const sandboxes = await work.sandboxes.deleteAll(user.userId);
    logger.info('account.deleted', { userId: user.userId, sandboxes: sandboxes.length });
    return {
      success: true as const,
      user_id: user.userId,
      status: 'deleting' as const,
      deleted_sandbox_ids: sandboxes,
    };
  }
}

/**
 * How many items one run removes at most (over every account being purged): the daily usage reconcile's
 * function runs it after the reconcile, within its 15 minutes (a BatchWriteItem deletes 25).
 */
export const PURGE_ITEMS_PER_RUN = 50_000;

/** The scheduled part of a deletion (the daily reconcile's function): removes the person's stored data, a bounded amount a run. */
export class AccountPurge {
  constructor(
    private readonly store: AccountPurgeStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async sweep(budget = PURGE_ITEMS_PER_RUN): Promise<{ items: number; purged: number }> {
    let items = 0;
    let purged = 0;
    for (const user of await this.store.purging(10)) {
      if (items >= budget) break;
      const { deleted, more } = await this.store.deleteSome(user.userId, budget - items);
      items += deleted;
      if (!more && (await this.store.markPurged(user, this.now().toISOString()))) purged++;
    }
    if (items) logger.info('account.purge', { items, purged });
    return { items, purged };
  }
}
