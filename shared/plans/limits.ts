import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { planLimit } from '#shared/http/errors.ts';
import type { Plan } from '#shared/plans/model.ts';

/**
 * The `code` of a 402 refusal (`{"detail", "code", "limit", "used"}`): the plan member that refused.
 * The enumeration is closed; shared/plans/README.md says which are enforced where.
 */
export const limitCodes = [
  'max_running_sandboxes',
  'max_resource_factor',
  'sandbox_hours_per_month',
  'monthly_spend_usd',
  'max_conversations',
  'max_paused_sandboxes',
  'max_events_per_conversation',
  'max_event_bytes_per_org',
  // A prepaid plan's balance is spent (`limit`: USD granted, `used`: USD spent since the first grant).
  'credits_exhausted',
] as const;
export type LimitCode = (typeof limitCodes)[number];

/** 402 naming the plan member that refused, its limit and what is used. */
export const limitRefusal = (code: LimitCode, limit: number, used: number, message: string) =>
  planLimit(code, limit, used, message);

/** A monthly limit the organization's usage has reached, or undefined. */
export function monthlyLimitReached(
  plan: Plan,
  month: { factorSeconds: number; computeMicroUsd: number; llmMicroUsd?: number },
): { code: LimitCode; limit: number; used: number; message: string } | undefined {
  // The spend limit counts compute and platform LLM costs (the gateway holds its own calls to it beforehand).
  const spent = month.computeMicroUsd + (month.llmMicroUsd ?? 0);
  const hours = Math.round((month.factorSeconds / 3600) * 1000) / 1000;
  if (month.factorSeconds >= plan.sandbox_hours_per_month * 3600)
    return {
      code: 'sandbox_hours_per_month',
      limit: plan.sandbox_hours_per_month,
      used: hours,
      message: `the organization's plan allows ${plan.sandbox_hours_per_month} sandbox hours per month (wall time x resource factor) and ${hours} are used`,
    };
  if (spent >= plan.monthly_spend_usd * 1_000_000)
    return {
      code: 'monthly_spend_usd',
      limit: plan.monthly_spend_usd,
      used: spent / 1_000_000,
      message: `the organization's plan allows ${plan.monthly_spend_usd} USD of usage per month and ${spent / 1_000_000} USD are used`,
    };
  return undefined;
}

/**
 * Who pays for what a request starts: the caller's organization and its plan's name, as the
 * authorizer read them (a plan change reaches requests within the authorizer's account cache, 30 s).
 * A caller without an organization (none today) counts as an organization of their own.
 */
export interface Tenant {
  orgId: string;
  /** The organization's plan; undefined: the default plan. */
  plan?: string;
}

export const tenantOf = (userId: string, auth: Pick<AuthorizerContext, 'orgId' | 'plan'>): Tenant => ({
  orgId: auth.orgId ?? userId,
  ...(auth.plan ? { plan: auth.plan } : {}),
});
