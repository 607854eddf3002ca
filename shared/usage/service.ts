import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { forbidden } from '#shared/http/errors.ts';
import type { DayTotals, LlmAmounts, UsageAmounts, UsageStore } from '#shared/usage/usage-store.ts';

/** Integer micro-USD as a JSON number with at most 6 decimals (exact in its decimal form). */
export const usd = (micro: number): number => {
  const sign = micro < 0 ? '-' : '';
  const m = Math.abs(micro);
  return Number(`${sign}${Math.trunc(m / 1_000_000)}.${String(m % 1_000_000).padStart(6, '0')}`);
};

type Totals = UsageAmounts & Required<LlmAmounts>;

const view = (t: Totals) => ({
  vcpu_seconds: t.vcpuSeconds,
  gb_seconds: t.gbSeconds,
  compute_cost_usd: usd(t.computeMicroUsd),
  // Platform LLM calls, as the gateway counted them (authoritative); cached tokens apart from input.
  llm_calls: t.llmCalls,
  llm_input_tokens: t.llmInputTokens,
  llm_output_tokens: t.llmOutputTokens,
  llm_cached_input_tokens: t.llmCachedTokens,
  llm_cache_write_input_tokens: t.llmCacheWriteTokens,
  llm_cost_usd: usd(t.llmMicroUsd),
  total_cost_usd: usd(t.computeMicroUsd + t.llmMicroUsd),
});
const zero = (): Totals => ({
  seconds: 0,
  factorSeconds: 0,
  vcpuSeconds: 0,
  gbSeconds: 0,
  computeMicroUsd: 0,
  llmCalls: 0,
  llmInputTokens: 0,
  llmOutputTokens: 0,
  llmCachedTokens: 0,
  llmCacheWriteTokens: 0,
  llmMicroUsd: 0,
});
const add = (into: Totals, t: Partial<Totals>) => {
  for (const k of Object.keys(into) as (keyof Totals)[]) into[k] += Number(t[k] ?? 0);
  return into;
};
/** Totals grouped by `key`, sorted by it. */
function grouped(rows: DayTotals[], key: (d: DayTotals) => string, total: Totals): [string, Totals][] {
  const by = new Map<string, Totals>();
  for (const d of rows) {
    const k = key(d);
    add(by.get(k) ?? by.set(k, zero()).get(k)!, d);
    add(total, d);
  }
  return [...by].sort(([a], [b]) => a.localeCompare(b));
}

/**
 * `GET /api/v1/usage`: the ledger's totals for the caller. Owners and admins see their organization
 * (per day, per member with `group_by=user`, per platform model with `group_by=model`); a member sees
 * their own usage only (per day; 403 for the other groupings). The organization is always the
 * caller's own (from the authorizer): no parameter names another.
 */
export class UsageService {
  constructor(private readonly store: UsageStore) {}

  async report(
    userId: string,
    auth: Pick<AuthorizerContext, 'orgId' | 'role'>,
    query: { from: string; to: string; group_by: 'day' | 'user' | 'model' },
  ) {
    const orgId = auth.orgId ?? userId;
    const manager = auth.role === 'owner' || auth.role === 'admin';
    if (query.group_by !== 'day' && !manager)
      throw forbidden(`Only an owner or admin of the organization sees its usage per ${query.group_by}`);
    let items: Record<string, unknown>[];
    const total = zero();
    if (query.group_by === 'user') {
      items = grouped(await this.store.orgUserDays(orgId, query.from, query.to), (d) => d.userId!, total).map(
        ([user, t]) => ({ user_id: user, ...view(t) }),
      );
    } else if (query.group_by === 'model') {
      items = grouped(await this.store.orgModelDays(orgId, query.from, query.to), (d) => d.model!, total).map(
        ([model, t]) => ({ model, ...view(t) }),
      );
    } else {
      const days: DayTotals[] = manager
        ? await this.store.orgDays(orgId, query.from, query.to)
        : await this.store.userDays(orgId, userId, query.from, query.to);
      items = days.map((d) => {
        add(total, d);
        return { day: d.day, ...view(add(zero(), d)) };
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

  /**
   * `GET /api/v1/notifications`: the 80% / 100% notices of the caller's organization (owners and
   * admins; a member is 403), newest month first, paged by the store's key (`after`).
   */
  async notices(userId: string, auth: Pick<AuthorizerContext, 'orgId' | 'role'>, limit: number, after?: string) {
    const orgId = auth.orgId ?? userId;
    if (auth.role !== 'owner' && auth.role !== 'admin')
      throw forbidden('Only an owner or admin of the organization sees its usage notifications');
    const page = await this.store.notices(orgId, limit, after);
    // Within a month the key orders by limit; the page shows them by when they were crossed.
    const items = page.items
      .sort((a, b) => b.period.localeCompare(a.period) || b.at.localeCompare(a.at))
      .map((n) => ({
        org_id: n.orgId,
        period: n.period,
        limit: n.limit,
        threshold: n.threshold,
        used: n.used,
        limit_value: n.limitValue,
        unit: n.unit,
        at: n.at,
      }));
    return { orgId, items, last: page.last };
  }
}
