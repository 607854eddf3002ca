import type { AccountStore } from '#shared/accounts/account-store.ts';
import type { Audit } from '#shared/accounts/audit.ts';
import type { Caller } from '#shared/accounts/organizations.ts';
import { ApiError, notFound } from '#shared/http/errors.ts';
import type { Plans } from '#shared/plans/model.ts';
import { usd } from '#shared/usage/service.ts';
import { readStanding, standingOf } from '#shared/usage/standing.ts';
import type { CorrectionRecord, UsageStore } from '#shared/usage/usage-store.ts';
import { createHash } from 'node:crypto';

/**
 * Prepaid credits (docs/billing.md, "Prepaid credits"): an operator grants; usage debits through the
 * organization's day totals (nothing stored per debit); on a prepaid plan a spent balance is a hard stop.
 */
export class Credits {
  constructor(
    private readonly deps: {
      store: UsageStore;
      accounts: AccountStore;
      audit: Audit;
      plans: () => Plans;
      now?: () => Date;
    },
  ) {}

  /**
   * `POST /api/v1/admin/orgs/{org_id}/credits`: operators only (403), a known organization (404).
   * The first grant starts the account on its day: what the organization used that day before it is
   * its opening, not debited. Audited as `credits_granted`. Repeats are the idempotency layer's.
   */
  async grant(caller: Caller, orgId: string, microUsd: number, note?: string) {
    const org = await this.operatorsOrg(caller, orgId);
    const day = (this.deps.now?.() ?? new Date()).toISOString().slice(0, 10);
    let opening = 0;
    if (!(await this.deps.store.credits(orgId))) {
      const [today] = await this.deps.store.orgDays(orgId, day, day);
      opening = Number(today?.computeMicroUsd ?? 0) + Number(today?.llmMicroUsd ?? 0);
    }
    const account = await this.deps.store.grantCredits(orgId, microUsd, day, opening);
    await this.deps.audit.record(orgId, `operator:${caller.userId}`, 'credits_granted', {
      target: orgId,
      detail: `+${usd(microUsd)} USD${note ? `: ${note}` : ''}`,
    });
    const prepaid = this.deps.plans().plan(org.plan).prepaid;
    const standing = standingOf({ ...(await readStanding(this.deps.store, orgId, day, true)), account }, day);
    return {
      success: true as const,
      org_id: orgId,
      granted_usd: usd(microUsd),
      ...creditsView(standing.credits!, account.since),
      prepaid,
    };
  }

  /**
   * `POST /api/v1/admin/orgs/{org_id}/corrections` (docs/billing.md, "Corrections"): operators only (403), a
   * known organization (404) and, when one is named, a member of it (404). Writes a correction record of its
   * own (never an edit of another), whose id is a hash of what it says: the same correction again is 409
   * and counts once (a repeat with the same Idempotency-Key answers the first answer). Audited as
   * `correction_recorded`, naming the operator.
   */
  async correct(
    caller: Caller,
    orgId: string,
    input: { microUsd: number; day: string; reason: string; userId?: string },
  ) {
    await this.operatorsOrg(caller, orgId);
    if (input.userId !== undefined && (await this.deps.accounts.getUser(input.userId))?.orgId !== orgId)
      throw notFound('User not found in this organization');
    const at = (this.deps.now?.() ?? new Date()).toISOString();
    const userId = input.userId ?? null;
    const id = `corr_${createHash('sha256')
      .update(JSON.stringify([orgId, input.day, userId, input.microUsd, input.reason]))
      .digest('hex')
      .slice(0, 32)}`;
    const record: CorrectionRecord = {
      id,
      orgId,
      userId,
      day: input.day,
      microUsd: input.microUsd,
      reason: input.reason,
      operator: `operator:${caller.userId}`,
      at,
    };
    if (!(await this.deps.store.recordCorrection(record)))
      throw new ApiError(409, { detail: `This correction was recorded already (${id}); corrections are never edited` });
    const sign = input.microUsd < 0 ? '-' : '+';
    await this.deps.audit.record(orgId, record.operator, 'correction_recorded', {
      target: userId ?? orgId,
      detail: `${sign}${usd(Math.abs(input.microUsd))} USD on ${input.day}: ${input.reason}`,
    });
    return {
      success: true as const,
      id,
      org_id: orgId,
      user_id: userId,
      day: input.day,
      amount_usd: usd(input.microUsd),
      reason: input.reason,
      created_at: at,
    };
  }

  /** Operators only (403); a known, open organization (404). */
  private async operatorsOrg(caller: Caller, orgId: string) {
    if (!caller.operator) throw new ApiError(403, { detail: 'Only an operator can do this' });
    const org = await this.deps.accounts.getOrg(orgId);
    if (!org || org.status === 'closed') throw notFound('Organization not found');
    return org;
  }
}

/** The credits as the API shows them (USD, 6 decimals at most). */
export const creditsView = (
  c: { grantedMicroUsd: number; spentMicroUsd: number; balanceMicroUsd: number },
  since: string | null,
) => ({
  total_granted_usd: usd(c.grantedMicroUsd),
  spent_usd: usd(c.spentMicroUsd),
  balance_usd: usd(c.balanceMicroUsd),
  since,
});
