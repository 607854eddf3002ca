import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { getSandbox, processEnv, sandboxPids, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

const specsFile = join(PROJECT_ROOT, 'test/fixtures/sandboxes/specs.json');
let stack: TestStack;
beforeAll(async () => {
  // The timer sweeper stays out of the way: these tests call sweep() with the time they need.
  stack = await startTestStack({ sandboxes: { maxRunning: 2 }, specsFile, sweepIntervalMs: 3_600_000 });
});
afterAll(() => stack?.stop());

const minutes = (n: number) => new Date(Date.now() + n * 60_000);

async function start(key: string, spec?: string) {
  const res = await stack.call('POST', `/api/v1/sandboxes${spec ? `?sandbox_spec_id=${spec}` : ''}`, { key });
  expect(res.status).toBe(200);
  return res;
}

describe('the sweeper', () => {
  it('pauses a sandbox only after SANDBOX_IDLE_MINUTES without agent activity', async () => {
    const key = await stack.newUser('idler');
    const { body } = await start(key);
    await waitForSandboxStatus(stack, body.id, 'RUNNING', key);
    expect((await stack.services.sandboxHousekeeping.sweep(minutes(10))).paused).not.toContain(body.id);
    expect((await getSandbox(stack, body.id, key))!.status).toBe('RUNNING');
    const summary = await stack.services.sandboxHousekeeping.sweep(minutes(31));
    expect(summary.paused).toContain(body.id);
    const paused = (await getSandbox(stack, body.id, key))!;
    expect(paused.status).toBe('PAUSED');
    expect(paused.detail).toBe('Paused after 30 minutes without agent activity');
    expect(sandboxPids(body.id)).toEqual([]);
  });

  it('turns a start that never checks in into ERROR with a clear detail, and stops its process', async () => {
    const key = await stack.newUser('stuck');
    const { body } = await start(key, 'never-checks-in');
    await waitFor('the process', () => (sandboxPids(body.id).length === 1 ? true : undefined));
    expect((await stack.services.sandboxHousekeeping.sweep(new Date(Date.now() + 30_000))).failed).not.toContain(
      body.id,
    );
    expect((await stack.services.sandboxHousekeeping.sweep(new Date(Date.now() + 61_000))).failed).toContain(body.id);
    const failed = (await getSandbox(stack, body.id, key))!;
    expect(failed.status).toBe('ERROR');
    expect(failed.detail).toBe('The sandbox did not check in within 60 seconds of starting');
    expect(sandboxPids(body.id)).toEqual([]);
  });

  it('stops a process that no live record owns', async () => {
    const key = await stack.newUser('orphaned');
    const { body } = await start(key);
    await waitForSandboxStatus(stack, body.id, 'RUNNING', key);
    // The record says PAUSED but the process was never stopped (a lost stop).
    const store = new DynamoSandboxStore();
    const rec = (await store.get(body.id))!;
    await store.update(body.id, rec.version, { status: 'PAUSED', liveShard: null, liveUserId: null });
    expect(sandboxPids(body.id)).toHaveLength(1);
    expect((await stack.services.sandboxHousekeeping.sweep()).orphans).toContain(body.id);
    expect(sandboxPids(body.id)).toEqual([]);
  });

  it('marks a RUNNING sandbox whose process is gone as MISSING; it can be resumed', async () => {
    const key = await stack.newUser('missing');
    const { body } = await start(key);
    const running = await waitForSandboxStatus(stack, body.id, 'RUNNING', key);
    // Stopped behind the service's back, with no exit event (as after a lost ECS event).
    await stack.sandboxRuntime.stop({ sandboxId: running.id, generation: 1 });
    expect((await stack.services.sandboxHousekeeping.sweep()).missing).toContain(body.id);
    const missing = (await getSandbox(stack, body.id, key))!;
    expect(missing.status).toBe('MISSING');
    expect(missing.detail).toBe('The sandbox process or task no longer exists');
    await stack.call('POST', `/api/v1/sandboxes/${body.id}/resume`, { key });
    await waitForSandboxStatus(stack, body.id, 'RUNNING', key);
  });
});

describe('starting', () => {
  it('turns a command that cannot run into ERROR with a readable detail, not a 500', async () => {
    const key = await stack.newUser('broken');
    const { body } = await start(key, 'no-such-binary');
    expect(body.status).toBe('ERROR');
    expect(body.detail).toContain('Could not run "/nonexistent/sandbox-binary"');
    expect((await stack.call('GET', '/api/v1/sandboxes/search', { key })).body.items[0].status).toBe('ERROR');
  });

  it("passes the spec's initial_env to the program", async () => {
    const key = await stack.newUser('flavour');
    const { body } = await start(key);
    await waitForSandboxStatus(stack, body.id, 'RUNNING', key);
    expect(processEnv(sandboxPids(body.id)[0]!)?.SANDBOX_FLAVOUR).toBe('test');
  });

  it('pauses the least recently active sandbox beyond MAX_RUNNING_SANDBOXES and says which', async () => {
    const key = await stack.newUser('busy');
    const a = (await start(key)).body;
    const b = (await start(key)).body;
    const aRunning = await waitForSandboxStatus(stack, a.id, 'RUNNING', key);
    await waitForSandboxStatus(stack, b.id, 'RUNNING', key);
    // b did something since it checked in; a did not: a is the least recently active.
    await stack.call('POST', `/api/v1/sandboxes/${b.id}/bridge/heartbeat`, {
      key: (await stack.sandboxKey(b.id))!,
      body: { active: true },
    });
    expect(aRunning.status).toBe('RUNNING');

    const third = await start(key);
    expect(third.headers.get('x-paused-sandbox-ids')).toBe(a.id);
    const pausedA = (await getSandbox(stack, a.id, key))!;
    expect(pausedA.status).toBe('PAUSED');
    expect(pausedA.detail).toBe('Paused to stay within 2 running sandboxes per user');
    expect(sandboxPids(a.id)).toEqual([]);

    const resumed = await stack.call('POST', `/api/v1/sandboxes/${a.id}/resume`, { key });
    expect(resumed.headers.get('x-paused-sandbox-ids')).toBe(b.id);
    const live = (await stack.call('GET', '/api/v1/sandboxes/search', { key })).body.items.filter((s: any) =>
      ['STARTING', 'RUNNING'].includes(s.status),
    );
    expect(live.map((s: any) => s.id).sort()).toEqual([a.id, third.body.id].sort());
    // Other users are not affected by this user's limit.
    expect(third.headers.get('x-paused-sandbox-ids')).not.toContain(',');
  });
});
