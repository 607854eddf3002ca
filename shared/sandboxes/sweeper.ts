import { startTaskTimeoutSeconds } from '#shared/conversations/sweep.ts';
import type { PoolSweep } from '#shared/sandboxes/pool.ts';
import type { SweepSummary } from '#shared/sandboxes/records.ts';
import type { Services } from '#shared/services.ts';

/**
 * Idle pauses, stuck starts, missing and orphan tasks, unfinished deletes, stalled conversation starts,
 * the warm pool, the organizations' stored event bytes, and deleted accounts' data.
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
    accountsPurge: { items: number; purged: number };
  }
> {
  const sandboxes = await services.sandboxHousekeeping.sweep(now);
  const startTasksFailed = await services.conversationHousekeeping.sweepStartTasks(now, startTaskTimeout);
  // The warm pool: lost standbys, drains (idle, old revision, surplus) and the top-up.
  const pool = await services.warmPool.sweep(now);
  const eventBytes = await services.eventBytes.sweep();
  // Deleted accounts: their stored data, a bounded amount a run (shared/accounts/deletion.ts).
  const accountsPurge = await services.accountPurge.sweep();
  return { ...sandboxes, startTasksFailed, pool, eventBytes, accountsPurge };
}

/** The scheduled function (every minute on AWS); a start step silent for 15 minutes fails by default. */
export const sweep = (_event: unknown, services: Services) =>
  sweepAll(services, new Date(), startTaskTimeoutSeconds(process.env, 900));
