import * as z from '#shared/zod.ts';

/*
 * The plan schema of docs/SAAS-CONTRACTS (owned by the "Pay per use" issue; the noisy-neighbour caps
 * read it too). Every member is optional in a plan: `PLAN_DEFAULTS` applies where a plan omits one,
 * and is what applies before any plan is configured. The defaults are the contract's `free` plan.
 */

/** What applies for each member a plan leaves out (and with no plans file at all). */
export const PLAN_DEFAULTS = {
  /** Sandboxes running at once per organization (402 beyond; the per-user MAX_RUNNING_SANDBOXES stays beneath it). */
  max_running_sandboxes: 2,
  /** Sandbox hours per calendar month (UTC): wall time x resource factor. */
  sandbox_hours_per_month: 20,
  /** The largest resource factor a sandbox of this plan may ask for. */
  max_resource_factor: 1,
  /** Spend per calendar month (UTC), compute and platform LLM costs. */
  monthly_spend_usd: 5,
  /** At a limit: `stop` (pause, refuse) or `warn` (tell, keep going). */
  on_limit: 'stop' as 'stop' | 'warn',
  /**
   * Prepaid credits: usage (compute and platform LLM cost) debits the organization's balance, which an
   * operator grants; at zero the hard stop applies whatever `on_limit` says (docs/billing.md, "Prepaid credits").
   */
  prepaid: false,
  /** The platform models this plan may use. */
  platform_models: ['platform/claude-sonnet'] as string[],
  llm_requests_per_minute: 60,
  llm_tokens_per_minute: 200_000,
  /** Open event-stream sockets per user, over all conversations (close 4429 beyond; 429 on AWS `$connect`). */
  max_stream_sockets_per_user: 20,
  /** Open event-stream sockets per conversation (close 4429 beyond). */
  max_stream_sockets_per_conversation: 5,
  /** Conversations kept per user (402 beyond). */
  max_conversations: 1000,
  /** Paused sandboxes kept per user (402 beyond: delete one first). */
  max_paused_sandboxes: 20,
  /** Events stored per conversation (402 to the sandbox beyond, and the conversation stops with an event saying why). */
  max_events_per_conversation: 100_000,
  /** Stored event bytes per organization (per user until organizations land), summed by the sweeper. */
  max_event_bytes_per_org: 1_000_000_000,
  /** Events a sandbox may post per second (a token bucket: 429 with Retry-After beyond). */
  events_per_sandbox_per_second: 200,
  /** Authenticated requests per user per minute (per authorizer container: approximate). */
  requests_per_user_per_minute: 600,
};
export type Plan = typeof PLAN_DEFAULTS;

const count = z.number().check(z.int(), z.gte(0));
const positive = z.number().check(z.int(), z.gt(0));

/** One plan: any member may be omitted (its default applies); an unknown member is refused (a typo would do nothing). */
export const planSchema = z.strictObject({
  max_running_sandboxes: z.optional(count),
  sandbox_hours_per_month: z.optional(z.number().check(z.gte(0))),
  max_resource_factor: z.optional(z.number().check(z.gt(0))),
  monthly_spend_usd: z.optional(z.number().check(z.gte(0))),
  on_limit: z.optional(z.enum(['stop', 'warn'])),
  prepaid: z.optional(z.boolean()),
  platform_models: z.optional(z.array(z.string().check(z.minLength(1)))),
  llm_requests_per_minute: z.optional(count),
  llm_tokens_per_minute: z.optional(count),
  max_stream_sockets_per_user: z.optional(positive),
  max_stream_sockets_per_conversation: z.optional(positive),
  max_conversations: z.optional(positive),
  max_paused_sandboxes: z.optional(count),
  max_event_bytes_per_org: z.optional(positive),
  max_events_per_conversation: z.optional(positive),
  events_per_sandbox_per_second: z.optional(positive),
  requests_per_user_per_minute: z.optional(positive),
});

/** The plans file (`config/plans.json`, `PLANS_FILE`) and the CDK context `plans`: the default plan must be one of them. */
export const plansSchema = z
  .strictObject({
    default_plan: z.string().check(z.minLength(1)),
    plans: z.record(
      z.string().check(z.regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'a plan name: a-z, 0-9, _ and -')),
      planSchema,
    ),
  })
  .check(
    z.refine((p) => p.default_plan in p.plans, {
      message: 'must name one of the plans',
      path: ['default_plan'],
    }),
  );
export type PlansConfig = z.output<typeof plansSchema>;

/** Plans with every member filled in from `PLAN_DEFAULTS`. */
export interface Plans {
  readonly defaultPlan: string;
  /** The plan by name; the default plan for a name no longer configured (a plan removed from the file). */
  plan(name: string | undefined): Plan;
  /** Whether `name` is a configured plan (an operator may put an organization on it). */
  has(name: string): boolean;
  /** The configured plans' names. */
  readonly names: readonly string[];
}

/**
 * Validates plans (from a file or the environment: `source` names it in the message), failing with
 * the offending key named: `Configuration error: PLANS_FILE config/plans.json at plans.free.on_limit: ...`.
 */
export function parsePlans(raw: unknown, source: string): Plans {
  const parsed = plansSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`Configuration error: ${source} at ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  const filled = new Map(
    Object.entries(parsed.data.plans).map(([name, p]) => [
      name,
      Object.freeze({ ...PLAN_DEFAULTS, ...Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)) }),
    ]),
  );
  const defaultPlan = parsed.data.default_plan;
  return {
    defaultPlan,
    plan: (name) => filled.get(name ?? defaultPlan) ?? filled.get(defaultPlan)!,
    has: (name) => filled.has(name),
    names: [...filled.keys()],
  };
}

/** The plans before any are configured: one plan, `free`, of the defaults. */
export const DEFAULT_PLANS: Plans = parsePlans({ default_plan: 'free', plans: { free: {} } }, 'the built-in plans');
