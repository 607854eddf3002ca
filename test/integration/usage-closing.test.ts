import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { processEnv, sandboxPids } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/**
 * The end of a sandbox's billing (docs/billing.md, "Closing records", "Silent sandboxes"), over HTTP
 * against the local stack: a pause or delete bills up to the pause, once however often it is asked; a
 * crash bills to the last sign of life, not to its discovery; a program that posts events but never
 * heartbeats is metered by the sweeper to its last sign of life. The sandboxes run a program that never
 * checks in; the test checks in with its enrollment token and heartbeats itself.
 */
let stack: TestStack;
let usage: DynamoUsageStore;
let sandboxStore: DynamoSandboxStore;

beforeAll(async () => {
  stack = await startTestStack({
    specsFile: join(PROJECT_ROOT, 'test/fixtures/sandboxes/specs.json'),
    sweepIntervalMs: 3_600_000,
  });
  usage = new DynamoUsageStore();
  sandboxStore = new DynamoSandboxStore();
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

const bridge = (id: string, path: string) => `/api/v1/sandboxes/${id}/bridge/${path}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runningSandbox(key: string): Promise<{ id: string; sessionKey: string }> {
  const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=never-checks-in', { key });
  expect(res.status, res.text).toBe(200);
  const id = res.body.id as string;
  const token = await waitFor('the enrollment token', () => {
    const pid = sandboxPids(id)[0];
    return pid ? processEnv(pid)?.ENROLLMENT_TOKEN : undefined;
  });
  const checkIn = await stack.call('POST', bridge(id, 'check-in'), { key: token, body: { version: 'test' } });
  expect(checkIn.status, checkIn.text).toBe(200);
  return { id, sessionKey: checkIn.body.session_api_key };
}
const heartbeat = (id: string, sessionKey: string) =>
  stack.call('POST', bridge(id, 'heartbeat'), { key: sessionKey, body: { active: false } });

/** The generation's records: contiguous from its check-in, each starting where the last ended. */
async function ledgerOf(id: string) {
  const records = await usage.computeRecords(id, 1);
  const rec = (await sandboxStore.get(id))!;
  expect(records[0]?.from).toBe(rec.runningAt);
  for (let i = 1; i < records.length; i++) expect(records[i]!.from).toBe(records[i - 1]!.to);
  return { records, rec, end: records.length ? Date.parse(records.at(-1)!.to) : Date.parse(rec.runningAt!) };
}

describe('a closing record at a pause or delete', () => {
  it('a pause right after a heartbeat and one a few seconds later: the ledger covers up to the pause, once', async () => {
    const key = await stack.newUser('close-a');
    for (const waitMs of [1_100, 2_100]) {
      const { id, sessionKey } = await runningSandbox(key);
      await sleep(1_100);
      expect((await heartbeat(id, sessionKey)).status).toBe(200);
      const afterBeat = (await ledgerOf(id)).records.length;
      expect(afterBeat).toBe(1);
      await sleep(waitMs);
      const paused = await stack.call('POST', `/api/v1/sandboxes/${id}/pause`, { key });
      expect(paused.status, paused.text).toBe(200);
      const { records, rec, end } = await ledgerOf(id);
      expect(rec.status).toBe('PAUSED');
      // One closing record, from the heartbeat's end to the pause (whole seconds: under one second short).
      expect(records).toHaveLength(2);
      const pausedAt = Date.parse(rec.updatedAt);
      expect(end).toBeLessThanOrEqual(pausedAt);
      expect(pausedAt - end).toBeLessThan(1_000);
      expect(records[1]!.seconds).toBeGreaterThanOrEqual(Math.floor(waitMs / 1000));
      // Records expire USAGE_RETENTION_DAYS (default 400) after their day; totals do not.
      const raw = (await usage.computeRecords(id, 1))[0] as unknown as { expiresAtEpoch: number };
      expect(raw.expiresAtEpoch).toBe(Date.parse(records[0]!.day) / 1000 + 400 * 86_400);
      // Its totals moved with it.
      const day = records[0]!.day;
      const orgId = records[0]!.orgId;
      const [user] = await usage.userDays(orgId, 'close-a', day, day);
      expect(user!.records).toBeGreaterThanOrEqual(records.length);
      expect(user).not.toHaveProperty('expiresAtEpoch');
      // Paused again (and a late heartbeat of the stopped program): nothing more.
      expect((await stack.call('POST', `/api/v1/sandboxes/${id}/pause`, { key })).status).toBe(200);
      await heartbeat(id, sessionKey);
      expect((await ledgerOf(id)).records).toHaveLength(2);
    }
  }, 60_000);

  it('a delete bills up to the delete', async () => {
    const key = await stack.newUser('close-b');
    const { id, sessionKey } = await runningSandbox(key);
    await sleep(1_100);
    await heartbeat(id, sessionKey);
    await sleep(2_100);
    const before = Date.now();
    expect((await stack.call('DELETE', `/api/v1/sandboxes/${id}`, { key })).status).toBe(200);
    const records = await usage.computeRecords(id, 1);
    expect(records).toHaveLength(2);
    expect(Date.parse(records[1]!.to)).toBeGreaterThan(before - 1_000);
    expect(records[1]!.from).toBe(records[0]!.to);
  }, 60_000);

  it('a crash bills to the last sign of life, not to its discovery', async () => {
    const key = await stack.newUser('close-c');
    const { id, sessionKey } = await runningSandbox(key);
    await sleep(1_100);
    await heartbeat(id, sessionKey);
    // Events posted a second later (what the events bridge route records as the sandbox's activity), then silence.
    await sleep(1_200);
    const lastSign = new Date();
    expect(await sandboxStore.touchActivity(id, lastSign.toISOString())).toBe(true);
    await sleep(1_500);
    for (const pid of sandboxPids(id)) process.kill(pid, 'SIGKILL');
    // The process's exit ends the record (ERROR), as a task's STOPPED event does on AWS.
    await waitFor('the crash recorded', async () =>
      (await sandboxStore.get(id))?.status !== 'RUNNING' ? true : undefined,
    );
    const records = await usage.computeRecords(id, 1);
    expect(records).toHaveLength(2);
    const end = Date.parse(records[1]!.to);
    expect(end).toBeLessThanOrEqual(lastSign.getTime());
    expect(lastSign.getTime() - end).toBeLessThan(1_000);
  }, 60_000);
});

describe('silent sandboxes', () => {
  it('a program that posts events but never heartbeats is metered by the sweeper to its last sign of life', async () => {
    const key = await stack.newUser('silent-a');
    const { id } = await runningSandbox(key);
    // No heartbeat at all; events keep coming for 2 s.
    await sleep(2_100);
    const lastSign = new Date();
    await sandboxStore.touchActivity(id, lastSign.toISOString());
    // A sweep within two heartbeat intervals of the check-in leaves it to its heartbeats.
    expect((await stack.services.sandboxHousekeeping.sweep(new Date())).metered).not.toContain(id);
    expect(await usage.computeRecords(id, 1)).toEqual([]);
    // Later: two heartbeat intervals without a record, but signs of life: metered to the last one.
    const later = new Date(Date.now() + 61_000);
    expect((await stack.services.sandboxHousekeeping.sweep(later)).metered).toContain(id);
    const { records, rec } = await ledgerOf(id);
    expect(records).toHaveLength(1);
    expect(records[0]!.seconds).toBe(Math.floor((lastSign.getTime() - Date.parse(rec.runningAt!)) / 1000));
    // The next sweep finds nothing new to meter (no sign of life since).
    expect((await stack.services.sandboxHousekeeping.sweep(new Date(Date.now() + 62_000))).metered).not.toContain(id);
    expect(await usage.computeRecords(id, 1)).toHaveLength(1);
    // Still RUNNING: its pause later bills only up to its last sign of life (it stayed silent).
    expect(rec.status).toBe('RUNNING');
  }, 60_000);
});
