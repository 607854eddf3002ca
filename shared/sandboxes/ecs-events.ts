import type { InstanceStopped } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
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
    /** ECS's timestamps (ISO), read from a RUNNING event for the start's phases. */
    createdAt?: string;
    pullStartedAt?: string;
    pullStoppedAt?: string;
    startedAt?: string;
    overrides?: { containerOverrides?: { name?: string; environment?: { name?: string; value?: string }[] }[] };
  };
}

/** Exit codes of the program's check of a user's image (sandbox/image-check.ts). */
export const IMAGE_CHECK_EXIT: Record<number, string> = {
  80: "The sandbox image has no bash, which the agent's terminal runs in: use an image that has bash (e.g. Debian or Ubuntu based)",
  81: 'The sandbox image has no git, which the agent and repository checkouts need: use an image that has git',
};

/** Why a user's image could not run, named from ECS's reasons and the program's exit code; undefined when it is not the image. */
function imageProblem(text: string, exitCode: number | undefined, shown: string): string | undefined {
  if (exitCode !== undefined && IMAGE_CHECK_EXIT[exitCode]) return IMAGE_CHECK_EXIT[exitCode];
  if (
    /exec format error|does not match the specified platform|no matching manifest|platform.*(arm64|linux\/arm)/i.test(
      text,
    )
  ) {
    return `The sandbox image is not built for linux/arm64 (sandbox tasks run on ARM64; many public images are amd64 only): ${shown}`;
  }
  if (/\/opt\/acs\/node.*no such file|no such file.*\/opt\/acs\/node/i.test(text)) {
    return `The sandbox image has no glibc (e.g. Alpine's musl), which the sandbox program's Node needs: use a glibc-based image (Debian, Ubuntu, ...): ${shown}`;
  }
  if (/CannotPullContainer|pull image|ImagePull|pull access denied|manifest unknown|not found: manifest/i.test(text)) {
    return `The sandbox image could not be pulled: ${shown}`;
  }
  return undefined;
}

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
  const image = imageProblem(`${reason} ${container?.reason ?? ''}`, container?.exitCode, container?.reason ?? reason);
  if (image) return image;
  switch (d.stopCode) {
    case 'TaskFailedToStart':
      return `The sandbox task failed to start: ${reason}${exit}`;
    case 'EssentialContainerExited':
      return `The sandbox program exited${exit}: ${reason}`;
    case 'SpotInterruption':
      return "Paused: Fargate Spot reclaimed the capacity the sandbox ran on (the workspace was saved in the two minutes' notice); resume it to continue";
    case 'UserInitiated':
      return `The sandbox task was stopped: ${reason}`;
    default:
      return `ECS stopped the sandbox task: ${reason}${exit}`;
  }
}

/**
 * Reads a STOPPED task event into what the service acts on, or undefined for anything else (another
 * status, a task this service did not start). The sandbox id is `startedBy`; the generation
 * comes from the container overrides the task was started with, so no lookup is needed.
 */
export function parseTaskStateChange(event: EcsTaskStateChange): InstanceStopped | undefined {
  const d = event.detail;
  if (event['detail-type'] !== 'ECS Task State Change' || !d || d.lastStatus !== 'STOPPED' || !d.startedBy)
    return undefined;
  const env: Record<string, string> = {};
  for (const c of d.overrides?.containerOverrides ?? [])
    for (const e of c.environment ?? []) if (e.name) env[e.name] = e.value ?? '';
  if (env.SANDBOX_ID !== d.startedBy) return undefined;
  const generation = Number(env.SANDBOX_GENERATION);
  if (!Number.isInteger(generation) || generation < 1) return undefined;
  return {
    sandboxId: d.startedBy,
    generation,
    requested: d.stopCode === 'UserInitiated',
    resumable: d.stopCode === 'SpotInterruption',
    detail: stopDetail(d),
  };
}

/** A sandbox's own task (not a standby's) from a RUNNING event: its id and generation, as for a stop. */
function parseTaskStarted(event: EcsTaskStateChange): { sandboxId: string; generation: number } | undefined {
  const d = event.detail;
  if (!d?.startedBy || d.startedBy.startsWith('sb_')) return undefined;
  const stopped = parseTaskStateChange({ ...event, detail: { ...d, lastStatus: 'STOPPED' } });
  return stopped && { sandboxId: stopped.sandboxId, generation: stopped.generation };
}

/**
 * The ECS events function: a crash becomes ERROR, a stop that was asked for or a Spot interruption
 * PAUSED, and the last task of a deleted sandbox completes its delete (its snapshots go then).
 * Idempotent, so a redelivered event does no harm; an error is thrown so EventBridge retries (then the DLQ).
 */
export async function handleTaskStateChange(event: EcsTaskStateChange, services: Services): Promise<void> {
  const { sandboxHousekeeping } = services;
  const d = event.detail;
  // A sandbox's task is RUNNING: its cold start's PROVISIONING and PENDING (the pull), from ECS's timestamps.
  if (event['detail-type'] === 'ECS Task State Change' && d?.lastStatus === 'RUNNING') {
    const started = parseTaskStarted(event);
    if (started) await sandboxHousekeeping.recordTaskTimes(started.sandboxId, started.generation, d);
    return;
  }
  // A warm-pool standby's task: its pool item by the `startedBy` ECS fixed at RunTask (the standby id),
  // one GetItem, and only if the item names this task ARN (docs/architecture.md, "The warm pool").
  if (
    event['detail-type'] === 'ECS Task State Change' &&
    d?.lastStatus === 'STOPPED' &&
    d.startedBy?.startsWith('sb_')
  ) {
    const standby = await services.warmPool.standbyStopped(d.startedBy, d.taskArn ?? '');
    if (!standby) return;
    if (standby.sandboxId && standby.generation) {
      // Claimed: the task is that sandbox's generation, and its stop is the sandbox's.
      await sandboxHousekeeping.handleInstanceStopped({
        sandboxId: standby.sandboxId,
        generation: standby.generation,
        requested: d.stopCode === 'UserInitiated',
        resumable: d.stopCode === 'SpotInterruption',
        detail: stopDetail(d),
      });
      await sandboxHousekeeping.continueDelete(standby.sandboxId);
    } else if (d.stopCode === 'SpotInterruption') {
      // An interrupted Spot standby is replaced at once rather than at the next sweep.
      await services.warmPool.refill(standby.specId);
    }
    return;
  }
  const stopped = parseTaskStateChange(event);
  if (!stopped) return;
  await sandboxHousekeeping.handleInstanceStopped(stopped);
  await sandboxHousekeeping.continueDelete(stopped.sandboxId);
}
