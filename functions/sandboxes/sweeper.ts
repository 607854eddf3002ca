import type { SweepSummary } from '#shared/sandboxes/service.ts';
import { awsServices } from '#shared/wiring/aws.ts';

/** Scheduled (every minute): idle pauses, stuck starts, missing tasks, orphan tasks, unfinished deletes. */
export async function handler(): Promise<SweepSummary> {
  return awsServices().sandboxes.sweep(new Date());
}
