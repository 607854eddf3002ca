import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { logger } from '#shared/logging.ts';
import { documentClient } from '#shared/store/dynamo.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/**
 * 80% / 100% notices over the local stack: many heartbeats crossing a threshold together send exactly
 * one notice (the conditional put on the notice's key decides), the console's list is the
 * organization's owners' and admins' only, newest month first and paged with a signed cursor.
 * The racers are the heartbeat's own metering (`SandboxBridge.meter`) on sandbox records of the
 * test's making: their intervals are the test's to choose, and no process needs to run.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    plansFile: join(PROJECT_ROOT, 'test/fixtures/plans/credits.json'),
    sweepIntervalMs: 3_600_000,
  });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

const orgOf = async (key: string) => (await stack.call('GET', '/api/v1/users/me', { key })).body.org_id as string;

/** `n` RUNNING sandboxes of the organization, on `plan`, each checked in at `runningAt` (records only). */
function racers(orgId: string, userId: string, plan: string, n: number, runningAt: string): SandboxRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `race-${orgId.slice(-6)}-${i}`,
    userId,
    orgId,
    specId: 'default',
    status: 'RUNNING',
    version: 1,
    generation: 1,
    createdAt: runningAt,
    updatedAt: runningAt,
    lastActivityAt: runningAt,
    runningAt,
    plan,
  }));
}
const thresholdLines = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls.filter((c) => c[0] === 'usage.threshold').map((c) => c[1] as Record<string, unknown>);

describe('80% and 100% notices', () => {
  it('a heartbeat that crosses nothing reads nothing more: the notice rides on the ADD it makes anyway', async () => {
    const key = await stack.newUser('notice-quiet');
    const orgId = await orgOf(key);
    const [rec] = racers(orgId, 'notice-quiet', 'roomy', 1, new Date(Date.now() - 600_000).toISOString());
    const sent: string[] = [];
    const client = documentClient();
    client.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(
          `${context.commandName}@${((args.input as { TableName?: string }).TableName ?? '').replace(/^acs-/, '')}`,
        );
        return next(args);
      },
      { step: 'initialize', name: 'countNoticeRequests' },
    );
    try {
      await stack.services.sandboxBridge.meter(rec!, new Date(Date.parse(rec!.runningAt!) + 60_000));
    } finally {
      client.middlewareStack.remove('countNoticeRequests');
    }
    // The interval's start, the record, its two totals, the month: as before notices existed.
    expect(sent).toEqual([
      'QueryCommand@usage',
      'PutItemCommand@usage',
      'UpdateItemCommand@usage',
      'UpdateItemCommand@usage',
      'QueryCommand@usage',
    ]);
  });

  it('20 heartbeats crossing together send each threshold exactly once; later crossings send nothing', async () => {
    const key = await stack.newUser('notice-owner');
    const orgId = await orgOf(key);
    await stack.putOnPlan('notice-owner', 'quarter-hour', key);
    const warn = vi.spyOn(logger, 'warn').mockImplementation(() => {});
    // 0.25 hours = 900 s: 80% at 720 s, 100% at 900 s; 20 racers of 60 s each make 1200 s.
    const t0 = new Date(Date.now() - 3600_000);
    const recs = racers(orgId, 'notice-owner', 'quarter-hour', 20, t0.toISOString());
    const at = new Date(t0.getTime() + 60_000);
    await Promise.all(recs.map((r) => stack.services.sandboxBridge.meter(r, at)));
    const sent = thresholdLines(warn);
    expect(sent.map((n) => `${n.limit}@${n.threshold}`).sort()).toEqual([
      'sandbox_hours_per_month@100',
      'sandbox_hours_per_month@80',
    ]);
    expect(sent.every((n) => n.orgId === orgId && n.period === t0.toISOString().slice(0, 7))).toBe(true);
    // The crossing heartbeat saw the total its own ADD left: 80% is noticed at 720 s (12 records) exactly.
    expect(sent.find((n) => n.threshold === 80)).toMatchObject({ used: 0.2, limitValue: 0.25, unit: 'hours' });
    expect(sent.find((n) => n.threshold === 100)).toMatchObject({ used: 0.25 });
    // More heartbeats above the limit, racing again: nothing more (once per month).
    warn.mockClear();
    const later = new Date(at.getTime() + 60_000);
    await Promise.all(recs.map((r) => stack.services.sandboxBridge.meter(r, later)));
    expect(thresholdLines(warn)).toEqual([]);

    const list = await stack.call('GET', '/api/v1/notifications', { key });
    expect(list.status, list.text).toBe(200);
    expect(list.body.items.map((n: { threshold: number }) => n.threshold)).toEqual([100, 80]);
    expect(list.body.items[0]).toEqual({
      org_id: orgId,
      period: t0.toISOString().slice(0, 7),
      limit: 'sandbox_hours_per_month',
      threshold: 100,
      used: 0.25,
      limit_value: 0.25,
      unit: 'hours',
      at: expect.any(String),
    });
    expect(list.body.next_page_id).toBeNull();
    // Paged: one a page, the cursor signed for this organization's list.
    const first = await stack.call('GET', '/api/v1/notifications?limit=1', { key });
    expect(first.body.items).toHaveLength(1);
    expect(first.body.next_page_id).toEqual(expect.any(String));
    const second = await stack.call('GET', `/api/v1/notifications?limit=1&page_id=${first.body.next_page_id}`, {
      key,
    });
    expect(second.body.items.map((n: { threshold: number }) => n.threshold)).toEqual([80]);

    // Another organization sees none of it, and cannot use this one's cursor.
    const otherKey = await stack.newUser('notice-stranger');
    const other = await stack.call('GET', '/api/v1/notifications', { key: otherKey });
    expect(other.status).toBe(200);
    expect(other.body.items).toEqual([]);
    const replay = await stack.call('GET', `/api/v1/notifications?limit=1&page_id=${first.body.next_page_id}`, {
      key: otherKey,
    });
    expect(replay.status).toBe(400);
    // A member of the organization: 403.
    const memberKey = await stack.newUser('notice-member');
    await orgOf(memberKey);
    const accounts = new DynamoAccountStore();
    const member = (await accounts.getUser('notice-member'))!;
    expect(await accounts.replaceUser({ ...member, orgId, role: 'member' })).toBe(true);
    stack.services.accounts.forget('notice-member');
    expect((await stack.call('GET', '/api/v1/notifications', { key: memberKey })).status).toBe(403);
    expect((await stack.call('GET', '/api/v1/notifications?limit=0', { key })).status).toBe(422);
    expect((await stack.call('GET', '/api/v1/notifications', { key: null })).status).toBe(401);
  }, 60_000);
});
