import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseTaskStateChange, type EcsTaskStateChange } from '#shared/sandboxes/ecs-events.ts';

const SID = '0123456789abcdef0123456789abcdef';
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/ecs-events/${name}`, import.meta.url), 'utf8')) as EcsTaskStateChange;

describe('parseTaskStateChange (EventBridge "ECS Task State Change")', () => {
  it('reads a crash as an unrequested stop of that generation, with the exit in the detail', () => {
    expect(parseTaskStateChange(fixture('stopped-crash.json'))).toEqual({
      kind: 'run',
      stopped: {
        sandboxId: SID,
        generation: 2,
        requested: false,
        detail: 'The sandbox program exited (exit code 137, OutOfMemoryError: Container killed due to memory usage): Essential container in task exited',
      },
    });
  });

  it('reads a StopTask (UserInitiated) as a requested stop', () => {
    expect(parseTaskStateChange(fixture('stopped-user-initiated.json'))).toEqual({
      kind: 'run',
      stopped: { sandboxId: SID, generation: 2, requested: true, detail: 'The sandbox task was stopped: Task stopped by user' },
    });
  });

  it('says plainly when the image could not be pulled', () => {
    const parsed = parseTaskStateChange(fixture('stopped-image-pull.json'));
    expect(parsed?.kind === 'run' && parsed.stopped).toEqual({
      sandboxId: SID,
      generation: 2,
      requested: false,
      detail: expect.stringMatching(/^The sandbox image could not be pulled: CannotPullContainerError: pull image manifest/),
    });
  });

  it('explains a Fargate Spot interruption', () => {
    const parsed = parseTaskStateChange(fixture('stopped-spot.json'));
    expect(parsed?.kind === 'run' && parsed.stopped.detail).toBe('Fargate Spot reclaimed the capacity the sandbox ran on; resume it to start again');
    expect(parsed?.kind === 'run' && parsed.stopped.requested).toBe(false);
  });

  it('recognises a finished workspace wipe', () => {
    expect(parseTaskStateChange(fixture('stopped-wipe.json'))).toEqual({ kind: 'wipe', sandboxId: SID });
  });

  it('ignores other statuses, other tasks and other events', () => {
    expect(parseTaskStateChange(fixture('running.json'))).toBeUndefined();
    expect(parseTaskStateChange(fixture('stopped-foreign.json'))).toBeUndefined();
    expect(parseTaskStateChange({ ...fixture('stopped-crash.json'), 'detail-type': 'ECS Container Instance State Change' })).toBeUndefined();
    const noGeneration = fixture('stopped-crash.json');
    noGeneration.detail!.overrides!.containerOverrides![0]!.environment = [{ name: 'SANDBOX_ID', value: SID }];
    expect(parseTaskStateChange(noGeneration)).toBeUndefined();
    expect(parseTaskStateChange({})).toBeUndefined();
  });
});
