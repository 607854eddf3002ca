import { logger } from '#shared/logging.ts';
import type { Plan } from '#shared/plans/model.ts';
import type { Standing } from '#shared/usage/standing.ts';
import type { NoticeLimit, UsageNotice, UsageStore } from '#shared/usage/usage-store.ts';

/** Where a notice goes beyond the ledger: the operator's EventBridge bus on AWS; none locally (the log line and the list). */
export interface UsageBus {
  send(notice: UsageNotice): Promise<void>;
}

/** The bus event's source and detail-type (docs/billing.md, "Notifications"). */
export const NOTICE_SOURCE = 'acs.usage';
export const NOTICE_DETAIL_TYPE = 'acs.usage.threshold';

const THRESHOLDS = [80, 100] as const;
const hours = (factorSeconds: number) => Math.round((factorSeconds / 3600) * 1000) / 1000;

/**
 * The thresholds a write moved the organization across, from `before` to `after`: 80% and 100% of
 * `sandbox_hours_per_month` and `monthly_spend_usd` (the month), and of a prepaid plan's credits granted
 * (100% = exhausted). A limit of 0 has no thresholds to cross.
 */
export function crossings(
  plan: Plan,
  before: Standing,
  after: Standing,
): Omit<UsageNotice, 'orgId' | 'period' | 'at'>[] {
  const out: Omit<UsageNotice, 'orgId' | 'period' | 'at'>[] = [];
  const check = (
    limit: NoticeLimit,
    limitValue: number,
    scale: number,
    was: number,
    now: number,
    unit: UsageNotice['unit'],
  ) => {
    if (!(limitValue > 0)) return;
    for (const threshold of THRESHOLDS) {
      const edge = (limitValue * scale * threshold) / 100;
      if (was < edge && now >= edge)
        out.push({ limit, threshold, limitValue, unit, used: unit === 'hours' ? hours(now) : now / 1e6 });
    }
  };
  check(
    'sandbox_hours_per_month',
    plan.sandbox_hours_per_month,
    3600,
    before.month.factorSeconds,
    after.month.factorSeconds,
    'hours',
  );
  const spend = (s: Standing) => s.month.computeMicroUsd + s.month.llmMicroUsd;
  check('monthly_spend_usd', plan.monthly_spend_usd, 1e6, spend(before), spend(after), 'USD');
  if (plan.prepaid && before.credits && after.credits)
    check(
      'credits',
      after.credits.grantedMicroUsd / 1e6,
      1e6,
      before.credits.spentMicroUsd,
      after.credits.spentMicroUsd,
      'USD',
    );
  return out;
}

/**
 * Tells an organization's owners when its usage crosses 80% and 100% of a limit, once per
 * (organization, limit, threshold, month): the notice's key decides among racing writers (a
 * conditional put: exactly one wins), and only the winner logs `usage.threshold` and sends the bus
 * event. Called by the writers that already read the month (the heartbeat's plan check, the LLM
 * gateway's metering), with the standing around their own write: no extra read. Never throws: a
 * notice is not worth a failed heartbeat (a bus failure after the claim is logged; the list keeps it).
 */
export class UsageAlerts {
  constructor(private readonly deps: { store: UsageStore; bus: () => UsageBus | null; now?: () => Date }) {}

  async check(orgId: string, plan: Plan, before: Standing, after: Standing, day: string): Promise<UsageNotice[]> {
    const sent: UsageNotice[] = [];
    for (const c of crossings(plan, before, after)) {
      const notice: UsageNotice = {
        ...c,
        orgId,
        period: day.slice(0, 7),
        at: (this.deps.now?.() ?? new Date()).toISOString(),
      };
      try {
        if (!(await this.deps.store.claimNotice(notice))) continue;
        sent.push(notice);
        logger.warn('usage.threshold', { ...notice });
        await this.deps.bus()?.send(notice);
      } catch (err) {
        logger.error('A usage notice failed', { orgId, limit: c.limit, threshold: c.threshold, error: err as Error });
      }
    }
    return sent;
  }
}
