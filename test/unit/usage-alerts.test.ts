import { describe, expect, it } from 'vitest';
import { parsePlans } from '#shared/plans/model.ts';
import { crossings } from '#shared/usage/alerts.ts';
import { aroundWrite, limitReached, standingOf, type StandingInput } from '#shared/usage/standing.ts';
import type { DayTotals } from '#shared/usage/usage-store.ts';

const plans = parsePlans(
  {
    default_plan: 'p',
    plans: {
      p: { sandbox_hours_per_month: 10, monthly_spend_usd: 5 },
      pre: { sandbox_hours_per_month: 1000, monthly_spend_usd: 1000, prepaid: true },
      zero: { sandbox_hours_per_month: 0, monthly_spend_usd: 0 },
    },
  },
  't',
);
const day = (d: string, computeMicroUsd: number, factorSeconds = 0, llmMicroUsd = 0): DayTotals => ({
  day: d,
  seconds: factorSeconds,
  factorSeconds,
  vcpuSeconds: 0,
  gbSeconds: 0,
  computeMicroUsd,
  llmMicroUsd,
  records: 1,
});

describe('standing and crossings', () => {
  it('counts the month of the day only; credits from the first grant on, less what that day held before it', () => {
    const input: StandingInput = {
      days: [day('2026-10-30', 1_000_000), day('2026-11-02', 2_000_000, 0, 500_000), day('2026-11-03', 250_000)],
      account: { grantedMicroUsd: 4_000_000, since: '2026-10-30', openingMicroUsd: 400_000, grants: 2 },
      prepaid: true,
    };
    const s = standingOf(input, '2026-11-03');
    expect(s.month.computeMicroUsd).toBe(2_250_000);
    expect(s.month.llmMicroUsd).toBe(500_000);
    // 1.0 + 2.5 + 0.25 - 0.4 opening = 3.35 spent of 4.
    expect(s.credits).toEqual({ grantedMicroUsd: 4_000_000, spentMicroUsd: 3_350_000, balanceMicroUsd: 650_000 });
    // A prepaid plan without any grant has nothing to spend.
    expect(standingOf({ days: input.days, prepaid: true }, '2026-11-03').credits?.balanceMicroUsd).toBe(0);
    expect(limitReached(plans.plan('pre'), standingOf({ days: [], prepaid: true }, '2026-11-03'))?.code).toBe(
      'credits_exhausted',
    );
    expect(standingOf({ days: input.days, prepaid: false }, '2026-11-03').credits).toBeUndefined();
  });

  it('notices a threshold only on the write that moves the total across it (80, then 100)', () => {
    const plan = plans.plan('p');
    const base: StandingInput = { days: [day('2026-11-01', 3_000_000, 7 * 3600)], prepaid: false };
    // Spend 3.0 -> 4.1 crosses 80% of 5 USD; hours 7 -> 8.2 crosses 80% of 10.
    const after = day('2026-11-02', 1_100_000, 1.2 * 3600);
    const w = aroundWrite(base, after, { computeMicroUsd: 1_100_000, factorSeconds: 1.2 * 3600 });
    const got = crossings(plan, standingOf(w.before, '2026-11-02'), standingOf(w.after, '2026-11-02'));
    expect(got.map((c) => `${c.limit}@${c.threshold}`).sort()).toEqual([
      'monthly_spend_usd@80',
      'sandbox_hours_per_month@80',
    ]);
    expect(got.find((c) => c.limit === 'monthly_spend_usd')).toMatchObject({ used: 4.1, limitValue: 5, unit: 'USD' });
    expect(got.find((c) => c.limit === 'sandbox_hours_per_month')).toMatchObject({ used: 8.2, unit: 'hours' });
    // A write that stays above 80% and below 100% crosses nothing; one that jumps from below 80 past 100 crosses both.
    const s = (c: number) => standingOf({ days: [day('2026-11-01', c)], prepaid: false }, '2026-11-01');
    expect(crossings(plan, s(4_100_000), s(4_900_000))).toEqual([]);
    expect(crossings(plan, s(1_000_000), s(5_000_000)).map((c) => c.threshold)).toEqual([80, 100]);
    // A limit of 0 has nothing to cross.
    expect(crossings(plans.plan('zero'), s(0), s(5_000_000))).toEqual([]);
  });

  it('notices credits at 80% and at exhaustion on a prepaid plan', () => {
    const plan = plans.plan('pre');
    const account = { grantedMicroUsd: 1_000_000, since: '2026-11-01', openingMicroUsd: 0, grants: 1 };
    const s = (c: number) => standingOf({ days: [day('2026-11-01', c)], account, prepaid: true }, '2026-11-01');
    expect(crossings(plan, s(700_000), s(850_000))).toMatchObject([{ limit: 'credits', threshold: 80, used: 0.85 }]);
    expect(crossings(plan, s(850_000), s(1_000_000))).toMatchObject([{ limit: 'credits', threshold: 100, used: 1 }]);
    expect(limitReached(plan, s(1_000_000))).toMatchObject({ code: 'credits_exhausted', limit: 1, used: 1 });
    expect(limitReached(plan, s(999_999))).toBeUndefined();
  });
});
