import type { LimitCode } from '#shared/plans/limits.ts';
import { monthlyLimitReached } from '#shared/plans/limits.ts';
import type { Plan } from '#shared/plans/model.ts';
import type { CreditAccount, DayTotals, UsageAmounts, UsageStore } from '#shared/usage/usage-store.ts';

/**
 * An organization's standing against its plan: the calendar month's totals (what the monthly limits
 * count) and, on a prepaid plan, its credits. Computed from the organization's day totals, so a
 * month is O(days) and the credit balance O(days since the first grant); nothing else is stored.
 */
export interface Standing {
  month: UsageAmounts & { llmMicroUsd: number };
  credits?: { grantedMicroUsd: number; spentMicroUsd: number; balanceMicroUsd: number };
}

/** What a standing is computed from: the day totals read and the credit account. */
export interface StandingInput {
  days: DayTotals[];
  account?: CreditAccount;
  prepaid: boolean;
}

const AMOUNT_KEYS = ['seconds', 'factorSeconds', 'vcpuSeconds', 'gbSeconds', 'computeMicroUsd', 'llmMicroUsd'] as const;
const monthStart = (day: string) => `${day.slice(0, 7)}-01`;

/**
 * Reads what the standing on `day` needs: the month's day totals (one Query of at most 31 items), and on a
 * prepaid plan the credit account (one GetItem) and the days from its first grant on (the same Query, wider).
 */
export async function readStanding(
  store: UsageStore,
  orgId: string,
  day: string,
  prepaid: boolean,
): Promise<StandingInput> {
  if (!prepaid) return { days: await store.orgDays(orgId, monthStart(day), `${day.slice(0, 7)}-31`), prepaid };
  const account = await store.credits(orgId);
  const from = account && account.since < monthStart(day) ? account.since : monthStart(day);
  // Up to the last day there is: credits count every day from the first grant on.
  return { days: await store.orgDays(orgId, from, '9999-12-31'), ...(account ? { account } : {}), prepaid };
}

const spentOf = (d: Partial<DayTotals>) => Number(d.computeMicroUsd ?? 0) + Number(d.llmMicroUsd ?? 0);

/** The standing on `day` (its month; credits from their first grant). A prepaid plan without a grant has a balance of 0. */
export function standingOf(input: StandingInput, day: string): Standing {
  const month = { seconds: 0, factorSeconds: 0, vcpuSeconds: 0, gbSeconds: 0, computeMicroUsd: 0, llmMicroUsd: 0 };
  const prefix = day.slice(0, 7);
  let spent = 0;
  for (const d of input.days) {
    if (d.day.startsWith(prefix))
      for (const k of Object.keys(month) as (keyof typeof month)[]) month[k] += Number(d[k] ?? 0);
    if (input.account && d.day >= input.account.since) spent += spentOf(d);
  }
  if (!input.prepaid) return { month };
  const granted = input.account?.grantedMicroUsd ?? 0;
  const spentMicroUsd = input.account ? spent - input.account.openingMicroUsd : 0;
  return { month, credits: { grantedMicroUsd: granted, spentMicroUsd, balanceMicroUsd: granted - spentMicroUsd } };
}

/**
 * The same input with one day's totals replaced by `after` (the value an ADD returned: serialized, so
 * exact among racing writers), and the input as it was before `delta` was added to that day.
 */
export function aroundWrite(
  input: StandingInput,
  after: DayTotals,
  delta: Partial<UsageAmounts & { llmMicroUsd: number }>,
): { before: StandingInput; after: StandingInput } {
  const others = input.days.filter((d) => d.day !== after.day);
  const prior = { ...after } as DayTotals & Record<string, number>;
  for (const k of AMOUNT_KEYS) prior[k] = Number(prior[k] ?? 0) - Number(delta[k] ?? 0);
  return { before: { ...input, days: [...others, prior] }, after: { ...input, days: [...others, after] } };
}

/**
 * The limit the organization has reached, or undefined: a spent prepaid balance (always a hard stop:
 * prepaid is prepaid), else the monthly limits (which stop only with `on_limit: stop`: the caller decides).
 */
export function limitReached(
  plan: Plan,
  standing: Standing,
): { code: LimitCode; limit: number; used: number; message: string } | undefined {
  const c = standing.credits;
  if (plan.prepaid && c && c.balanceMicroUsd <= 0)
    return {
      code: 'credits_exhausted',
      limit: c.grantedMicroUsd / 1e6,
      used: c.spentMicroUsd / 1e6,
      message: `the organization's prepaid credits are spent (${c.spentMicroUsd / 1e6} of ${c.grantedMicroUsd / 1e6} USD granted): an operator grants more`,
    };
  return monthlyLimitReached(plan, standing.month);
}
