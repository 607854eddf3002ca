import type { InstanceStopped } from '#shared/sandboxes/sandbox-runtime.ts';
import type { Services } from '#shared/services.ts';

/** The parts of an EventBridge "ECS Task State Change" event this service reads. */
export interface EcsTaskStateChange {
  source?: string;
  'detail-type'?: string;
  detail?: {
    taskArn?: string;
    lastStatus?: string;
    desiredStatus?: string;
    startedBy?: string;
    stopCode?: string;
    stoppedReason?: string;
    containers?: { name?: string; exitCode?: number; reason?: string; lastStatus?: string }[];
    overrides?: { containerOverrides?: { name?: string; environment?: { name?: string; value?: string }[] }[] };
  };
}

export type TaskEvent = { kind: 'run'; stopped: InstanceStopped } | { kind: 'wipe'; sandboxId: string };

/** A sentence a user can act on, from ECS's stop code, reason and container exit. */
function stopDetail(d: NonNullable<EcsTaskStateChange['detail']>): string {
  const reason = d.stoppedReason?.trim() || 'no reason given';
  const container = (d.containers ?? []).find((c) => c.exitCode !== undefined || c.reason);
  const exit =
    container?.exitCode !== undefined
      ? ` (exit code ${container.exitCode}${container.reason ? `, ${container.reason}` : ''})`
      : container?.reason
        ? ` (${container.reason})`
        : '';
  if (/CannotPullContainer|pull image|ImagePull/i.test(`${reason} ${container?.reason ?? ''}`)) {
    return `The sandbox image could not be pulled: ${container?.reason ?? reason}`;
  }
  switch (d.stopCode) {
    case 'TaskFailedToStart':
      return `The sandbox task failed to start: ${reason}${exit}`;
    case 'EssentialContainerExited':
      return `The sandbox program exited${exit}: ${reason}`;
    case 'SpotInterruption':
      return 'Fargate Spot reclaimed the capacity the sandbox ran on; resume it to start again';
    case 'UserInitiated':
      return `The sandbox task was stopped: ${reason}`;
    default:
      return `ECS stopped the sandbox task: ${reason}${exit}`;
  }
}

/**
 * Reads a STOPPED task event into what the service acts on, or undefined for anything else (another
 * status, a task this service did not start). The sandbox id is `startedBy`; the generation and mode
 * come from the container overrides the task was started with, so no lookup is needed.
 */
export function parseTaskStateChange(event: EcsTaskStateChange): TaskEvent | undefined {
  const d = event.detail;
  if (event['detail-type'] !== 'ECS Task State Change' || !d || d.lastStatus !== 'STOPPED' || !d.startedBy) return undefined;
  const env: Record<string, string> = {};
  for (const c of d.overrides?.containerOverrides ?? []) for (const e of c.environment ?? []) if (e.name) env[e.name] = e.value ?? '';
  if (env.SANDBOX_ID !== d.startedBy) return undefined;
  if (env.SANDBOX_MODE === 'wipe') return { kind: 'wipe', sandboxId: d.startedBy };
  const generation = Number(env.SANDBOX_GENERATION);
  if (!Number.isInteger(generation) || generation < 1) return undefined;
  return {
    kind: 'run',
    stopped: { sandboxId: d.startedBy, generation, requested: d.stopCode === 'UserInitiated', detail: stopDetail(d) },
  };
}

/**
 * The ECS events function: a crash becomes ERROR, a stop that was asked for PAUSED, a finished
 * workspace wipe completes the delete. Idempotent, so a redelivered event does no harm; an error
 * is thrown so EventBridge retries (then the DLQ).
 */
export async function handleTaskStateChange(event: EcsTaskStateChange, { sandboxHousekeeping }: Services): Promise<void> {
  const parsed = parseTaskStateChange(event);
  if (!parsed) return;
  if (parsed.kind === 'wipe') await sandboxHousekeeping.continueDelete(parsed.sandboxId);
  else await sandboxHousekeeping.handleInstanceStopped(parsed.stopped);
}
