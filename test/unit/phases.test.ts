import { describe, expect, it } from 'vitest';
import { checkedIn, emfLine, fromTaskTimes, restored } from '#shared/sandboxes/phases.ts';

const cold = { warm: false, requested_at: '2026-11-26T03:00:00.000Z', run_task_ms: 120 };

describe("a start's phases", () => {
  it("reads a cold task's PROVISIONING, PENDING and container start from ECS's timestamps", () => {
    const p = fromTaskTimes(cold, {
      createdAt: '2026-11-26T03:00:00.100Z',
      pullStartedAt: '2026-11-26T03:00:08.100Z',
      pullStoppedAt: '2026-11-26T03:00:20.600Z',
      startedAt: '2026-11-26T03:00:21.000Z',
    });
    expect(p).toMatchObject({
      provisioning_ms: 8000,
      pending_ms: 12500,
      container_started_at: '2026-11-26T03:00:21.000Z',
    });
    // The check-in after it: container start to check-in, and the total from the request.
    expect(checkedIn(p, '2026-11-26T03:00:21.400Z')).toMatchObject({ check_in_ms: 400, total_ms: 21400 });
  });

  it('counts a warm check-in from the claim, and the restore as a phase of its own in the total', () => {
    const warm = { warm: true, requested_at: '2026-11-26T03:00:00.000Z', claimed_at: '2026-11-26T03:00:00.030Z' };
    const p = restored(checkedIn(warm, '2026-11-26T03:00:00.250Z'), 700);
    expect(p).toMatchObject({ check_in_ms: 220, restore_ms: 700, total_ms: 950 });
  });

  it('writes an EMF line with the phases present, dimension warm or cold', () => {
    const line = JSON.parse(emfLine({ ...cold, provisioning_ms: 8000, pending_ms: 12500 }, undefined, 1)!);
    expect(line.Start).toBe('cold');
    expect(line._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name)).toEqual([
      'StartRunTask',
      'StartProvisioning',
      'StartPending',
    ]);
    expect(line).toMatchObject({ StartRunTask: 120, StartProvisioning: 8000, StartPending: 12500 });
    expect(emfLine({ warm: true, requested_at: cold.requested_at })).toBeUndefined();
  });
});
