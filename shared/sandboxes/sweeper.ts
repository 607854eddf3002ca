import { startTaskTimeoutSeconds } from '#shared/conversations/sweep.ts';
import type { PoolSweep } from '#shared/sandboxes/pool.ts';
import type { SweepSummary } from '#shared/sandboxes/records.ts';
import type { Services } from '#shared/services.ts';

/** Idle pauses, stuck starts, missing and orphan tasks, unfinished deletes, stalled conversation starts. */
export async function sweepAll(
  services: Services,
  now: Date,
  startTaskTimeout: number,
): Promise<SweepSummary & { startTasksFailed: number; pool: PoolSweep }> {
  const sandboxes = await services.sandboxHousekeeping.sweep(now);
  const startTasksFailed = await services.conversationHousekeeping.sweepStartTasks(now, startTaskTimeout);
  // The warm pool: lost standbys, drains (idle, old revision, surplus) and the top-up.
  const pool = await services.warmPool.sweep(now);
  return { ...sandboxes, startTasksFailed, pool };
}

/** The scheduled function (every minute on AWS); a start step silent for 15 minutes fails by default. */
export const sweep = (_event: unknown, services: Services) =>
  sweepAll(services, new Date(), startTaskTimeoutSeconds(process.env, 900));
