import { startTaskTimeoutSeconds } from '#shared/conversations/sweep.ts';
import type { SweepSummary } from '#shared/sandboxes/records.ts';
import type { Services } from '#shared/services.ts';

/** Idle pauses, stuck starts, missing and orphan tasks, unfinished deletes, stalled conversation starts. */
export async function sweepAll(
  services: Services,
  now: Date,
  startTaskTimeout: number,
): Promise<SweepSummary & { startTasksFailed: number }> {
  const sandboxes = await services.sandboxHousekeeping.sweep(now);
  const startTasksFailed = await services.conversationHousekeeping.sweepStartTasks(now, startTaskTimeout);
  return { ...sandboxes, startTasksFailed };
}

/** The scheduled function (every minute on AWS); a start step silent for 15 minutes fails by default. */
export const sweep = (_event: unknown, services: Services) =>
  sweepAll(services, new Date(), startTaskTimeoutSeconds(process.env, 900));
