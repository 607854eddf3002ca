import { startTaskTimeoutSeconds } from '#shared/conversations/sweep.ts';
import type { BindingClaim } from '#shared/sandboxes/pool-claim.ts';
import type { PoolSweep } from '#shared/sandboxes/pool.ts';
import type { SweepSummary } from '#shared/sandboxes/lifecycle.ts';
import type { Services } from '#shared/services.ts';

/**
 * Idle pauses, stuck starts, missing and orphan tasks, unfinished deletes, stalled conversation starts,
 * the warm pool, and the organizations' stored event bytes.
 */
export async function sweepAll(
  services: Services,
  now: Date,
  startTaskTimeout: number,
): Promise<
  SweepSummary & {
    startTasksFailed: number;
    pool: PoolSweep;
    eventBytes: { conversations: number; organizations: number };
  }
> {
  const sandboxes = await services.sandboxHousekeeping.sweep(now);
  const startTasksFailed = await services.conversationHousekeeping.sweepStartTasks(now, startTaskTimeout);
  // The warm pool: lost standbys, drains (idle, old revision, surplus) and the top-up.
  const pool = await services.warmPool.sweep(now);
  const eventBytes = await services.eventBytes.sweep();
  return { ...sandboxes, startTasksFailed, pool, eventBytes };
}

/** The event a claim's binding deadline invokes the sweeper with (infra/constructs/binding-deadline.ts). */
export const deadlineOf = (event: unknown): BindingClaim | undefined => {
  const claim = (event as { bindingDeadline?: Partial<BindingClaim> } | null)?.bindingDeadline;
  return typeof claim?.sandbox_id === 'string' &&
    typeof claim.standby_id === 'string' &&
    Number.isInteger(claim.generation)
    ? { sandbox_id: claim.sandbox_id, generation: claim.generation!, standby_id: claim.standby_id }
    : undefined;
};

/**
 * The scheduled function (every minute on AWS); a start step silent for 15 minutes fails by default.
 * Invoked by a claim's binding deadline, it looks at that claim alone: a sweep of one record, its cold
 * start in `retried` as the full sweep reports one.
 */
export const sweep = async (event: unknown, services: Services) => {
  const claim = deadlineOf(event);
  if (!claim) return sweepAll(services, new Date(), startTaskTimeoutSeconds(process.env, 900));
  const cold = await services.sandboxHousekeeping.bindingDeadline(claim);
  return {
    paused: [],
    failed: [],
    missing: [],
    orphans: [],
    deleted: [],
    metered: [],
    retried: cold ? [claim.sandbox_id] : [],
  };
};
