import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { handleTaskStateChange, parseTaskStateChange, type EcsTaskStateChange } from '#shared/sandboxes/ecs-events.ts';
import { WarmPool, type WarmPoolDeps } from '#shared/sandboxes/pool.ts';
import type { PoolStore, StandbyRecord } from '#shared/sandboxes/pool-store.ts';
import type { InstanceStopped } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import type { Services } from '#shared/services.ts';

const SID = '0123456789abcdef0123456789abcdef';
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/ecs-events/${name}`, import.meta.url), 'utf8')) as EcsTaskStateChange;

/** The crash fixture with another reason and exit (what ECS reports for a user's image that cannot run). */
const crashWith = (stopCode: string, stoppedReason: string, container: { exitCode?: number; reason?: string }) => {
  const event = fixture('stopped-crash.json');
  Object.assign(event.detail!, {
    stopCode,
    stoppedReason,
    containers: [{ name: 'sandbox', lastStatus: 'STOPPED', ...container }],
  });
  return parseTaskStateChange(event);
};

describe('parseTaskStateChange (EventBridge "ECS Task State Change")', () => {
  it('reads a crash as an unrequested stop of that generation, with the exit in the detail', () => {
    expect(parseTaskStateChange(fixture('stopped-crash.json'))).toEqual({
      sandboxId: SID,
      generation: 2,
      requested: false,
      resumable: false,
      detail:
        'The sandbox program exited (exit code 137, OutOfMemoryError: Container killed due to memory usage): Essential container in task exited',
    });
  });

  it('reads a StopTask (UserInitiated) as a requested stop', () => {
    expect(parseTaskStateChange(fixture('stopped-user-initiated.json'))).toEqual({
      sandboxId: SID,
      generation: 2,
      requested: true,
      resumable: false,
      detail: 'The sandbox task was stopped: Task stopped by user',
    });
  });

  it('says plainly when the image could not be pulled', () => {
    expect(parseTaskStateChange(fixture('stopped-image-pull.json'))).toEqual({
      sandboxId: SID,
      generation: 2,
      requested: false,
      resumable: false,
      detail: expect.stringMatching(
        /^The sandbox image could not be pulled: CannotPullContainerError: pull image manifest/,
      ),
    });
  });

  it('reads a Fargate Spot interruption as resumable (PAUSED, not ERROR), saying why', () => {
    const parsed = parseTaskStateChange(fixture('stopped-spot.json'));
    expect(parsed?.detail).toBe(
      "Paused: Fargate Spot reclaimed the capacity the sandbox ran on (the workspace was saved in the two minutes' notice); resume it to continue",
    );
    expect(parsed?.requested).toBe(false);
    expect(parsed?.resumable).toBe(true);
  });

  it("names what is wrong with a user's image: architecture, libc, bash, git", () => {
    const arch = crashWith(
      'TaskFailedToStart',
      "CannotPullContainerError: pull image manifest has been retried 5 time(s): image Manifest does not contain descriptor matching platform 'linux/arm64'",
      {},
    );
    expect(arch?.detail).toMatch(
      /^The sandbox image is not built for linux\/arm64 \(sandbox tasks run on ARM64; many public images are amd64 only\)/,
    );
    const exec = crashWith('EssentialContainerExited', 'Essential container in task exited', {
      exitCode: 255,
      reason: 'exec /opt/acs/node: exec format error',
    });
    expect(exec?.detail).toMatch(/^The sandbox image is not built for linux\/arm64/);
    const musl = crashWith(
      'TaskFailedToStart',
      'CannotStartContainerError: ResourceInitializationError: failed to create new container runtime task: exec: "/opt/acs/node": stat /opt/acs/node: no such file or directory',
      {},
    );
    expect(musl?.detail).toMatch(/^The sandbox image has no glibc \(e\.g\. Alpine's musl\)/);
    expect(
      crashWith('EssentialContainerExited', 'Essential container in task exited', { exitCode: 80 })?.detail,
    ).toMatch(/^The sandbox image has no bash/);
    expect(
      crashWith('EssentialContainerExited', 'Essential container in task exited', { exitCode: 81 })?.detail,
    ).toMatch(/^The sandbox image has no git/);
    const denied = crashWith(
      'TaskFailedToStart',
      'CannotPullContainerError: pull access denied for acme/private, repository does not exist or may require authorization',
      {},
    );
    expect(denied?.detail).toMatch(
      /^The sandbox image could not be pulled: CannotPullContainerError: pull access denied/,
    );
  });

  it('ignores other statuses, other tasks and other events', () => {
    expect(parseTaskStateChange(fixture('running.json'))).toBeUndefined();
    expect(parseTaskStateChange(fixture('stopped-foreign.json'))).toBeUndefined();
    expect(
      parseTaskStateChange({ ...fixture('stopped-crash.json'), 'detail-type': 'ECS Container Instance State Change' }),
    ).toBeUndefined();
    const noGeneration = fixture('stopped-crash.json');
    noGeneration.detail!.overrides!.containerOverrides![0]!.environment = [{ name: 'SANDBOX_ID', value: SID }];
    expect(parseTaskStateChange(noGeneration)).toBeUndefined();
    expect(parseTaskStateChange({})).toBeUndefined();
  });
});

describe("a warm-pool standby's task events (resolved by startedBy, one GetItem, and the task ARN)", () => {
  const TASK = 'arn:aws:ecs:eu-west-1:123456789012:task/sandboxes/0123456789abcdef';
  const standby: StandbyRecord = {
    id: `sb_${'a'.repeat(32)}`,
    specId: 'default',
    poolSpec: 'default',
    status: 'delivered',
    version: 4,
    createdAt: '2026-11-26T08:00:00.000Z',
    updatedAt: '2026-11-26T08:01:00.000Z',
    ref: TASK,
    revision: 'arn:aws:ecs:eu-west-1:123456789012:task-definition/sandbox-default:1',
    capacity: 'FARGATE',
    sandboxId: SID,
    generation: 3,
  };
  /** The pool's item in a map (the two calls a stop makes), the housekeeping's calls recorded. */
  function world() {
    const items = new Map([[standby.id, { ...standby }]]);
    const reads: string[] = [];
    const store = {
      getStandby: async (id: string) => {
        reads.push(id);
        return items.get(id);
      },
      removeStandby: async (id: string) => void items.delete(id),
    } as unknown as PoolStore;
    const stopped: InstanceStopped[] = [];
    const services = {
      warmPool: new WarmPool({ store } as unknown as WarmPoolDeps),
      sandboxHousekeeping: {
        handleInstanceStopped: async (e: InstanceStopped) => void stopped.push(e),
        continueDelete: async () => false,
      },
    } as unknown as Services;
    return { items, reads, stopped, services };
  }
  const stoppedEvent = (taskArn: string): EcsTaskStateChange => ({
    'detail-type': 'ECS Task State Change',
    detail: { taskArn, lastStatus: 'STOPPED', startedBy: standby.id, stopCode: 'SpotInterruption', stoppedReason: 'x' },
  });

  it("a claimed standby's stop is its sandbox generation's (the generation from the claim, not the task's overrides)", async () => {
    const w = world();
    await handleTaskStateChange(stoppedEvent(TASK), w.services);
    expect(w.reads).toEqual([standby.id]);
    expect(w.items.has(standby.id)).toBe(false);
    expect(w.stopped).toEqual([expect.objectContaining({ sandboxId: SID, generation: 3, resumable: true })]);
  });

  it("another task's event with the standby's startedBy changes nothing: the item stays, no sandbox is told", async () => {
    const w = world();
    await handleTaskStateChange(stoppedEvent(`${TASK}ff`), w.services);
    expect(w.items.has(standby.id)).toBe(true);
    expect(w.stopped).toEqual([]);
  });
});
