import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { forbidden } from '#shared/http/errors.ts';
import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import { DEFAULT_PLANS, type Plans } from '#shared/plans/model.ts';
import { creditsView } from '#shared/usage/credits.ts';
import { readStanding, standingOf } from '#shared/usage/standing.ts';
import { roundHalfEven } from '#shared/usage/prices.ts';
import type {
  AgentAmounts,
  CorrectionAmounts,
  DayTotals,
  LlmAmounts,
  StorageAmounts,
  UsageAmounts,
  UsageStore,
} from '#shared/usage/usage-store.ts';

/** Integer micro-USD as a JSON number with at most 6 decimals (exact in its decimal form). */
export const usd = (micro: number): number => {
  const sign = micro < 0 ? '-' : '';
  const m = Math.abs(micro);
  return Number(`${sign}${Math.trunc(m / 1_000_000)}.${String(m % 1_000_000).padStart(6, '0')}`);
};

type Totals = UsageAmounts &
  Required<LlmAmounts> &
  Required<StorageAmounts> &
  Required<AgentAmounts> &
  Required<CorrectionAmounts>;

/** MiB-seconds as GB-hours (GB = 1024 MiB), rounded half-even to 6 decimals. */
export const gbHours = (mibSeconds: number): number =>
  usd(Number(roundHalfEven(BigInt(mibSeconds) * 1_000_000n, 3_686_400n)));

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
  // Workspace snapshots held (docs/billing.md, "Workspace storage").
  storage_gb_hours: gbHours(t.storageMibSeconds),
  storage_cost_usd: usd(t.storageMicroUsd),
  // Operators' corrections applied to these days (signed; docs/billing.md, "Corrections").
  correction_usd: usd(t.correctionMicroUsd),
  total_cost_usd: usd(t.computeMicroUsd + t.llmMicroUsd + t.storageMicroUsd + t.correctionMicroUsd),
  // The agent's own reports for a user's own key: informational, not in the total (docs/billing.md).
  reported_llm_calls: t.agentCalls,
  reported_llm_input_tokens: t.agentInputTokens,
  reported_llm_output_tokens: t.agentOutputTokens,
  reported_llm_cost_usd: usd(t.agentMicroUsd),
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
  storageRecords: 0,
  storageMibSeconds: 0,
  storageMicroUsd: 0,
  agentCalls: 0,
  agentInputTokens: 0,
  agentOutputTokens: 0,
  agentMicroUsd: 0,
  corrections: 0,
  correctionMicroUsd: 0,
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
  constructor(
    private readonly store: UsageStore,
    /** The plans: the organization's limits and credits shown beside its usage (owners, admins). */
    private readonly plans?: () => Plans,
    private readonly now: () => Date = () => new Date(),
    /** `group_by=conversation`: the caller's conversations, a page at a time (their `metrics`). */
    private readonly conversations?: () => ConversationStore,
  ) {}

  /**
   * `group_by=conversation`: the caller's own conversations updated from `from` to `to`, newest first,
   * one page of the conversations table at a time, each with the cost and tokens its `metrics` keep
   * (what the agent reported for its LLM calls: any model, its own price table; informational, not the
   * ledger's). Conversations are stored per user, so this view is the caller's even for an owner.
   */
  async conversationPage(
    userId: string,
    query: { from: string; to: string; limit: number; after?: Record<string, unknown> },
  ) {
    const next = new Date(Date.parse(`${query.to}T00:00:00Z`) + 86_400_000).toISOString();
    const page = await this.conversations!().list(
      userId,
      { updatedGte: `${query.from}T00:00:00.000Z`, updatedLt: next },
      query.limit,
      query.after,
    );
    return {
      items: page.items.map((c) => ({
        conversation_id: c.id,
        title: c.title,
        created_at: c.createdAt,
        updated_at: c.updatedAt,
        reported_llm_cost_usd: c.metrics?.accumulated_cost ?? 0,
        reported_llm_input_tokens: c.metrics?.prompt_tokens ?? 0,
        reported_llm_output_tokens: c.metrics?.completion_tokens ?? 0,
      })),
      lastKey: page.lastKey,
    };
  }

  /**
   * The organization's plan limits, what this month used of them, and a prepaid plan's credits (or
   * any credits granted): what the console draws as bars. One Query of the month (from the first
   * grant on, with credits) and one GetItem of the credit account.
   */
  private async limits(orgId: string, planName: string | undefined) {
    const plan = (this.plans?.() ?? DEFAULT_PLANS).plan(planName);
    const day = this.now().toISOString().slice(0, 10);
    const account = await this.store.credits(orgId);
    const standing = standingOf(await readStanding(this.store, orgId, day, plan.prepaid || !!account), day);
    return {
      // The plan that applies: a name no longer configured means the default plan.
      plan:
        planName && (this.plans?.() ?? DEFAULT_PLANS).has(planName)
          ? planName
          : (this.plans?.() ?? DEFAULT_PLANS).defaultPlan,
      month: day.slice(0, 7),
      on_limit: plan.on_limit,
      prepaid: plan.prepaid,
      sandbox_hours_per_month: plan.sandbox_hours_per_month,
      sandbox_hours_used: Math.round((standing.month.factorSeconds / 3600) * 1000) / 1000,
      monthly_spend_usd: plan.monthly_spend_usd,
      spend_used_usd: usd(standing.month.computeMicroUsd + standing.month.llmMicroUsd),
      credits: standing.credits ? creditsView(standing.credits, account?.since ?? null) : null,
    };
  }

  async report(
    userId: string,
    auth: Pick<AuthorizerContext, 'orgId' | 'role' | 'plan'>,
    query: { from: string; to: string; group_by: 'day' | 'user' | 'model' | 'conversation' },
    conversationItems?: Record<string, unknown>[],
  ) {
    const orgId = auth.orgId ?? userId;
    const manager = auth.role === 'owner' || auth.role === 'admin';
    if (query.group_by !== 'day' && query.group_by !== 'conversation' && !manager)
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
    } else if (query.group_by === 'conversation') {
      // The conversations' own reports; the total is the ledger's for the range (the organization's for a manager).
      items = conversationItems ?? [];
      const days = manager
        ? await this.store.orgDays(orgId, query.from, query.to)
        : await this.store.userDays(orgId, userId, query.from, query.to);
      for (const d of days) add(total, d);
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
      // Owners and admins: the plan's limits and the credits beside the usage.
      ...(manager ? { limits: await this.limits(orgId, auth.plan) } : {}),
    };
  }

  /**
   * `GET /api/v1/notifications`: the 80% / 100% notices of the caller's organization (owners and
   * admins; a member is 403), newest month first, then by limit and 100% before 80%, paged by the
   * store's key (`after`).
   */
  async notices(userId: string, auth: Pick<AuthorizerContext, 'orgId' | 'role'>, limit: number, after?: string) {
    const orgId = auth.orgId ?? userId;
    if (auth.role !== 'owner' && auth.role !== 'admin')
      throw forbidden('Only an owner or admin of the organization sees its usage notifications');
    const page = await this.store.notices(orgId, limit, after);
    // The store's key order, kept across pages: by month, then limit, then 100% before 80%. Not by
    // `at`: racing writers cross 80% and 100% within the same milliseconds in either order.
    const items = page.items.map((n) => ({
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
