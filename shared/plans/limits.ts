import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { planLimit } from '#shared/http/errors.ts';

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
] as const;
export type LimitCode = (typeof limitCodes)[number];

/** 402 naming the plan member that refused, its limit and what is used. */
export const limitRefusal = (code: LimitCode, limit: number, used: number, message: string) =>
  planLimit(code, limit, used, message);

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
