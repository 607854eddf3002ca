import type { Plan, Plans } from '#shared/plans/model.ts';

/**
 * The plan that applies to a user. Today every user is on the default plan. When organizations
 * land (each with a `plan` name), this becomes: the user's organization's plan, by name
 * (`plans.plan(org.plan)`); every cap and limit reads its plan through here only.
 */
export async function planOf(plans: Plans, _userId: string): Promise<Plan> {
  return plans.plan(undefined);
}
