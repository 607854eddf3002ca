import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { forbidden } from '#shared/http/errors.ts';
import type { DayTotals, UsageAmounts, UsageStore } from '#shared/usage/usage-store.ts';

/** Integer micro-USD as a JSON number with at most 6 decimals (exact in its decimal form). */
export const usd = (micro: number): number => {
  const sign = micro < 0 ? '-' : '';
  const m = Math.abs(micro);
  return Number(`${sign}${Math.trunc(m / 1_000_000)}.${String(m % 1_000_000).padStart(6, '0')}`);
};

const view = (t: UsageAmounts) => ({
  vcpu_seconds: t.vcpuSeconds,
  gb_seconds: t.gbSeconds,
  compute_cost_usd: usd(t.computeMicroUsd),
  // Compute is all that is metered yet (docs/billing.md): the total is the compute cost.
  total_cost_usd: usd(t.computeMicroUsd),
});
const zero = (): UsageAmounts => ({ seconds: 0, factorSeconds: 0, vcpuSeconds: 0, gbSeconds: 0, computeMicroUsd: 0 });
const add = (into: UsageAmounts, t: Partial<UsageAmounts>) => {
  into.seconds += Number(t.seconds ?? 0);
  into.factorSeconds += Number(t.factorSeconds ?? 0);
  into.vcpuSeconds += Number(t.vcpuSeconds ?? 0);
  into.gbSeconds += Number(t.gbSeconds ?? 0);
  into.computeMicroUsd += Number(t.computeMicroUsd ?? 0);
  return into;
};

/**
 * `GET /api/v1/usage`: the ledger's totals for the caller. Owners and admins see their organization
 * (per day, or per member with `group_by=user`); a member sees their own usage only (per day), and
 * `group_by=user` is theirs to ask for only as an owner or admin (403). The organization is always the
 * caller's own (from the authorizer): no parameter names another.
 */
export class UsageService {
  constructor(private readonly store: UsageStore) {}

  async report(
    userId: string,
    auth: Pick<AuthorizerContext, 'orgId' | 'role'>,
    query: { from: string; to: string; group_by: 'day' | 'user' },
  ) {
    const orgId = auth.orgId ?? userId;
    const manager = auth.role === 'owner' || auth.role === 'admin';
    if (query.group_by === 'user' && !manager)
      throw forbidden('Only an owner or admin of the organization sees its usage per member');
    let items: Record<string, unknown>[];
    const total = zero();
    if (query.group_by === 'user') {
      const byUser = new Map<string, UsageAmounts>();
      for (const d of await this.store.orgUserDays(orgId, query.from, query.to)) {
        add(byUser.get(d.userId!) ?? byUser.set(d.userId!, zero()).get(d.userId!)!, d);
        add(total, d);
      }
      items = [...byUser].sort(([a], [b]) => a.localeCompare(b)).map(([user, t]) => ({ user_id: user, ...view(t) }));
    } else {
      const days: DayTotals[] = manager
        ? await this.store.orgDays(orgId, query.from, query.to)
        : await this.store.userDays(orgId, userId, query.from, query.to);
      items = days.map((d) => {
        add(total, d);
        return { day: d.day, ...view(d) };
      });
    }
    return {
      org_id: orgId,
      scope: manager ? ('organization' as const) : ('user' as const),
      from: query.from,
      to: query.to,
      group_by: query.group_by,
      currency: 'USD' as const,
      items,
      total: view(total),
    };
  }
}
