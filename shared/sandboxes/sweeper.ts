import { startTaskTimeoutSeconds } from '#shared/conversations/sweep.ts';
import type { PoolSweep } from '#shared/sandboxes/pool.ts';
import type { SweepSummary } from '#shared/sandboxes/records.ts';
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

/** The scheduled function (every minute on AWS); a start step silent for 15 minutes fails by default. */
export const sweep = (_event: unknown, services: Services) =>
  sweepAll(services, new Date(), startTaskTimeoutSeconds(process.env, 900));
