import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSandbox, sandboxPids, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ sweepIntervalMs: 3_600_000 });
});
afterAll(() => stack?.stop());

type Op = 'pause' | 'resume' | 'delete';
const call = (id: string, op: Op) =>
  op === 'delete'
    ? stack.call('DELETE', `/api/v1/sandboxes/${id}`)
    : stack.call('POST', `/api/v1/sandboxes/${id}/${op}`);

/** Fires 50 calls at once; returns their statuses. */
async function storm(id: string, ops: Op[]): Promise<number[]> {
  const results = await Promise.all(ops.map((op) => call(id, op)));
  return results.map((r) => r.status);
}

/** After the storm: a status that matches the processes the OS has for the sandbox. */
async function expectConsistent(id: string): Promise<string> {
  const settled = await waitFor('the sandbox to settle', async () => {
    const s = (await getSandbox(stack, id))!;
    return s === null || s.status !== 'STARTING' ? (s ?? { status: 'DELETED' }) : undefined;
  });
  const pids = sandboxPids(id);
  if (settled.status === 'RUNNING') expect(pids).toHaveLength(1);
  else expect(pids).toEqual([]);
  expect(['RUNNING', 'PAUSED', 'DELETED']).toContain(settled.status);
  expect((await stack.sandboxRuntime.list()).filter((i) => i.sandboxId === id).length).toBe(pids.length);
  return settled.status;
}

describe('50 concurrent calls on one sandbox', () => {
  it('mixed pause and resume leave at most one process and a status that matches it', async () => {
    const { body } = await stack.call('POST', '/api/v1/sandboxes');
    await waitForSandboxStatus(stack, body.id, 'RUNNING');
    for (let round = 0; round < 2; round++) {
      const ops = Array.from({ length: 50 }, (_, i): Op => (i % 2 === round % 2 ? 'pause' : 'resume'));
      const statuses = await storm(body.id, ops);
      expect(statuses.filter((s) => s >= 500)).toEqual([]);
      expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
      await expectConsistent(body.id);
    }
  });

  it('mixed pause, resume and delete never answer 500 and leave nothing behind', async () => {
    const { body } = await stack.call('POST', '/api/v1/sandboxes');
    await waitForSandboxStatus(stack, body.id, 'RUNNING');
    const ops = Array.from({ length: 50 }, (_, i): Op => (i % 10 === 7 ? 'delete' : i % 2 ? 'pause' : 'resume'));
    const statuses = await storm(body.id, ops);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.every((s) => s === 200 || s === 404 || s === 409)).toBe(true);
    // Exactly one delete wins; later calls see a 404.
    expect(await expectConsistent(body.id)).toBe('DELETED');
    expect(sandboxPids(body.id)).toEqual([]);
  });
});
