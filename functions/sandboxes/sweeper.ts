import { startTaskTimeoutSeconds } from '#shared/conversations/sweep.ts';
import type { SweepSummary } from '#shared/sandboxes/service.ts';
import { awsServices } from '#shared/wiring/aws.ts';

/** Scheduled (every minute): idle pauses, stuck starts, missing and orphan tasks, unfinished deletes, stalled conversation starts. */
export async function handler(): Promise<SweepSummary & { startTasksFailed: number }> {
  const now = new Date();
  const services = awsServices();
  const sandboxes = await services.sandboxes.sweep(now);
  const startTasksFailed = await services.conversations.sweepStartTasks(now, startTaskTimeoutSeconds(process.env, 900));
  return { ...sandboxes, startTasksFailed };
}
