import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { StorageRecord } from '#shared/usage/usage-store.ts';
import { FocusLedger } from '#shared/billing/focus.ts';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { SandboxBridge } from '#shared/sandboxes/bridge-service.ts';
import type { SandboxServiceDeps } from '#shared/sandboxes/lifecycle.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import type { WorkspaceSnapshots } from '#shared/sandboxes/snapshots/workspace-snapshots.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { DynamoUsageStore, storageRecordItem, usageKeys } from '#shared/usage/dynamo-usage-store.ts';
import { UsageReconcile } from '#shared/usage/reconcile.ts';
import { DailyStorageMeter } from '#shared/usage/storage-close.ts';
import { dynamoStorageHoldings } from '#shared/usage/dynamo-storage-holdings.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { processEnv, sandboxPids } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/**
 * The usage ledger over HTTP against the local stack: the heartbeat meters a RUNNING sandbox's
 * compute once however often it is delivered, the totals are the sums of the records, an accruing
 * heartbeat costs at most three DynamoDB writes (none for a duplicate), and GET /api/v1/usage.
 * The sandboxes run a program that never checks in; the test checks in with the enrollment token
 * from its environment and sends the heartbeats itself, so every interval is the test's to choose.
 */
let stack: TestStack;
let usage: DynamoUsageStore;
let sandboxStore: DynamoSandboxStore;
/** `Command@table` of every DynamoDB request while set. */
let sent: string[] | undefined;

beforeAll(async () => {
  stack = await startTestStack({
    specsFile: join(PROJECT_ROOT, 'test/fixtures/sandboxes/specs.json'),
    sweepIntervalMs: 3_600_000,
  });
  usage = new DynamoUsageStore();
  sandboxStore = new DynamoSandboxStore();
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string };
      sent?.push(`${context.commandName}@${(input.TableName ?? '').replace(/^acs-/, '')}`);
      return next(args);
    },
    { step: 'initialize', name: 'countUsageRequests' },
  );
}, 60_000);
afterAll(async () => {
  documentClient().middlewareStack.remove('countUsageRequests');
  await stack?.stop();
});

const bridge = (id: string, path: string) => `/api/v1/sandboxes/${id}/bridge/${path}`;

/** A RUNNING sandbox of `key`'s user whose session key the test holds (it checked in as the program would). */
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
const sum = (items: Record<string, number>[], field: string) => items.reduce((n, r) => n + Number(r[field] ?? 0), 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('metering sandbox compute at the heartbeat', () => {
  it('counts the same heartbeat delivered 3 times once; totals equal the sum of the records', async () => {
    const key = await stack.newUser('meter-a');
    const orgId = await stack.orgOf(key);
    const { id, sessionKey } = await runningSandbox(key);
    // Nothing is billed before the first heartbeat.
    expect(await usage.computeRecords(id, 1)).toEqual([]);
    await sleep(1100);
    // Three deliveries at once: the same interval start, one conditional put wins.
    const three = await Promise.all([1, 2, 3].map(() => heartbeat(id, sessionKey)));
    expect(three.map((r) => r.status)).toEqual([200, 200, 200]);
    // And three more in a row within the same second: under a whole second, nothing to record.
    for (let i = 0; i < 3; i++) await heartbeat(id, sessionKey);
    const records = await usage.computeRecords(id, 1);
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record).toMatchObject({ orgId, userId: 'meter-a', generation: 1, cpuUnits: 1024, memoryMiB: 2048 });
    expect(record!.seconds).toBeGreaterThanOrEqual(1);
    // Nominal local size: 1 vCPU, 2 GiB, on-demand us-east-1 from config/prices.json, recorded on the record.
    expect(record!.price).toEqual({
      region: 'us-east-1',
      spot: false,
      vcpu_hour_usd: '0.03238',
      gb_hour_usd: '0.00356',
      markup_percent: '0',
    });
    await sleep(1100);
    await heartbeat(id, sessionKey);
    const all = await usage.computeRecords(id, 1);
    expect(all).toHaveLength(2);
    // Contiguous: each interval starts where the last ended.
    expect(all[1]!.from).toBe(all[0]!.to);
    const day = all[0]!.day;
    const [orgDay] = await usage.orgDays(orgId, day, day);
    const userDays = await usage.userDays(orgId, 'meter-a', day, day);
    for (const totals of [orgDay!, userDays[0]!])
      for (const field of ['seconds', 'vcpuSeconds', 'gbSeconds', 'computeMicroUsd'])
        expect(totals[field as 'seconds'], field).toBe(sum(all as never, field));
    expect(orgDay!.records).toBe(2);
    // Index byDay lists the organization's records (never its totals), in time order.
    const listed = [];
    for await (const page of usage.dayRecords(day, orgId)) listed.push(...page);
    expect(listed.map((r) => [r.kind, (r as { from: string }).from])).toEqual(all.map((r) => ['compute', r.from]));
  }, 60_000);

  it('costs at most three DynamoDB writes per accruing heartbeat and none for a duplicate', async () => {
    const key = await stack.newUser('meter-b');
    const { id, sessionKey } = await runningSandbox(key);
    await sleep(1100);
    const writes = (requests: string[]) => requests.filter((r) => /^(Put|Update|Delete|BatchWrite)/.test(r));
    sent = [];
    await heartbeat(id, sessionKey);
    const accruing = sent;
    sent = [];
    await heartbeat(id, sessionKey);
    const duplicate = sent;
    sent = undefined;
    expect(writes(accruing).sort()).toEqual([
      'PutItemCommand@usage',
      'UpdateItemCommand@usage',
      'UpdateItemCommand@usage',
    ]);
    expect(writes(duplicate)).toEqual([]);
  }, 60_000);

  it('prices exactly: an hour of the nominal size, and nothing for a sandbox that is not RUNNING', async () => {
    const key = await stack.newUser('meter-c');
    const { id } = await runningSandbox(key);
    const rec = (await sandboxStore.get(id))!;
    const at = new Date(Date.parse(rec.runningAt!) + 3600_000);
    const record = await stack.services.sandboxBridge.accrue(rec, at);
    // 3600 s x (1 vCPU x 0.03238 + 2 GB x 0.00356) USD/hour = 0.0395 USD.
    expect(record).toMatchObject({ seconds: 3600, vcpuSeconds: 3600, gbSeconds: 7200, computeMicroUsd: 39500 });
    // Delivered again (the same record read): the same key, nothing written.
    expect(await stack.services.sandboxBridge.accrue(rec, at)).toBeUndefined();
    await stack.call('POST', `/api/v1/sandboxes/${id}/pause`, { key });
    const paused = (await sandboxStore.get(id))!;
    expect(await stack.services.sandboxBridge.accrue(paused, new Date(at.getTime() + 60_000))).toBeUndefined();
    expect(await usage.computeRecords(id, 1)).toHaveLength(1);
  }, 60_000);
});

describe('time lost to our own 5xx is not billed', () => {
  it('heartbeats answered 500 for ten minutes: the next one bills one interval past the last sign of life, the rest is not billed', async () => {
    const key = await stack.newUser('meter-5xx');
    const orgId = await stack.orgOf(key);
    const { id, sessionKey } = await runningSandbox(key);
    // As if it had checked in ten minutes ago and its one heartbeat 30 s later was the last one heard.
    const interval = 30_000;
    const t0 = Date.now() - 600_000;
    let rec = (await sandboxStore.get(id))!;
    rec = (await sandboxStore.update(id, rec.version, {
      runningAt: new Date(t0).toISOString(),
      lastActivityAt: new Date(t0).toISOString(),
    }))!;
    const first = await stack.services.sandboxBridge.accrue(rec, new Date(t0 + interval));
    expect(first).toMatchObject({ seconds: 30, to: new Date(t0 + interval).toISOString() });
    // Since then our heartbeat route answered 500 (our fault, not the sandbox's; every function's bridge): nothing was recorded.
    const fault = vi
      .spyOn(SandboxBridge.prototype, 'heartbeat')
      .mockRejectedValue(new Error('injected: the control plane failed'));
    for (let i = 0; i < 3; i++) expect((await heartbeat(id, sessionKey)).status).toBe(500);
    fault.mockRestore();
    expect(await usage.computeRecords(id, 1)).toHaveLength(1);
    // The first heartbeat heard again, delivered 3 times at once: one record, of one interval past the
    // last sign of life (the first record's end); the 9 minutes after it are marked, not billed.
    const heard = await Promise.all([1, 2, 3].map(() => heartbeat(id, sessionKey)));
    expect(heard.map((r) => [r.status, r.body.status])).toEqual(heard.map(() => [200, 'RUNNING']));
    const records = await usage.computeRecords(id, 1);
    expect(records).toHaveLength(2);
    const gap = records[1]!;
    expect(gap).toMatchObject({ from: first!.to, to: new Date(t0 + 2 * interval).toISOString(), seconds: 30 });
    expect(Date.parse(gap.unbilledUntil!)).toBeGreaterThan(Date.now() - 60_000);
    // The next heartbeat continues from there, billed in full (a second or so).
    await sleep(1100);
    expect((await heartbeat(id, sessionKey)).status).toBe(200);
    const next = (await usage.computeRecords(id, 1))[2]!;
    expect(next.from).toBe(gap.unbilledUntil);
    expect(next.seconds).toBeGreaterThanOrEqual(1);
    expect(next.seconds).toBeLessThan(30);
    expect(next.unbilledUntil).toBeUndefined();
    // The totals are the records' (60 s and the last one): nothing of the unheard 9 minutes.
    const [orgDay] = await usage.orgDays(orgId, first!.day, first!.day);
    expect(orgDay!.seconds).toBe(60 + next.seconds);
  }, 60_000);

  it('a start whose check-in our route answered 500 is never billed', async () => {
    const key = await stack.newUser('meter-5xx-start');
    const orgId = await stack.orgOf(key);
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=never-checks-in', { key });
    expect(res.status, res.text).toBe(200);
    const id = res.body.id as string;
    const token = await waitFor('the enrollment token', () => {
      const pid = sandboxPids(id)[0];
      return pid ? processEnv(pid)?.ENROLLMENT_TOKEN : undefined;
    });
    const fault = vi
      .spyOn(SandboxBridge.prototype, 'checkIn')
      .mockRejectedValue(new Error('injected: the control plane failed'));
    const checkIn = await stack.call('POST', bridge(id, 'check-in'), { key: token, body: { version: 'test' } });
    fault.mockRestore();
    expect(checkIn.status).toBe(500);
    expect((await sandboxStore.get(id))!.status).toBe('STARTING');
    expect((await stack.call('DELETE', `/api/v1/sandboxes/${id}`, { key })).status).toBe(200);
    expect(await usage.computeRecords(id, 1)).toEqual([]);
    const day = new Date().toISOString().slice(0, 10);
    expect(await usage.orgDays(orgId, day, day)).toEqual([]);
  }, 60_000);
});

describe('GET /api/v1/usage', () => {
  /** Bills `seconds` of a new sandbox of `key`'s user (the interval chosen by the test, through the heartbeat's own code). */
  async function bill(key: string, seconds: number) {
    const { id } = await runningSandbox(key);
    const rec = (await sandboxStore.get(id))!;
    const record = await stack.services.sandboxBridge.accrue(
      rec,
      new Date(Date.parse(rec.runningAt!) + seconds * 1000),
    );
    expect(record?.seconds).toBe(seconds);
    return record!;
  }
  const get = (key: string, query = '') => stack.call('GET', `/api/v1/usage${query}`, { key });

  it('owners see the organization per day and per member; a member sees only their own; another org sees nothing', async () => {
    const ownerKey = await stack.newUser('usage-owner');
    const orgId = await stack.orgOf(ownerKey);
    const memberKey = await stack.newUser('usage-member');
    await stack.orgOf(memberKey);
    const accounts = new (await import('#shared/accounts/dynamo-account-store.ts')).DynamoAccountStore();
    const member = (await accounts.getUser('usage-member'))!;
    expect(await accounts.replaceUser({ ...member, orgId, role: 'member' })).toBe(true);
    stack.services.accounts.forget('usage-member');
    const a = await bill(ownerKey, 3600);
    const b = await bill(memberKey, 1800);
    const day = a.day;

    const org = await get(ownerKey);
    expect(org.status, org.text).toBe(200);
    expect(org.body).toMatchObject({ org_id: orgId, scope: 'organization', group_by: 'day', currency: 'USD' });
    const today = org.body.items.find((i: { day: string }) => i.day === day);
    expect(today).toEqual({
      day,
      vcpu_seconds: 5400,
      gb_seconds: 10800,
      compute_cost_usd: 0.05925,
      llm_calls: 0,
      llm_input_tokens: 0,
      llm_output_tokens: 0,
      llm_cached_input_tokens: 0,
      llm_cache_write_input_tokens: 0,
      llm_cost_usd: 0,
      storage_gb_hours: 0,
      storage_cost_usd: 0,
      correction_usd: 0,
      total_cost_usd: 0.05925,
      reported_llm_calls: 0,
      reported_llm_input_tokens: 0,
      reported_llm_output_tokens: 0,
      reported_llm_cost_usd: 0,
    });
    // The total is the sum of the records, to the micro-dollar.
    expect(org.body.total.compute_cost_usd).toBe((a.computeMicroUsd + b.computeMicroUsd) / 1e6);

    const perUser = await get(ownerKey, '?group_by=user');
    expect(perUser.body.items).toEqual([
      {
        user_id: 'usage-member',
        vcpu_seconds: 1800,
        gb_seconds: 3600,
        compute_cost_usd: 0.01975,
        llm_calls: 0,
        llm_input_tokens: 0,
        llm_output_tokens: 0,
        llm_cached_input_tokens: 0,
        llm_cache_write_input_tokens: 0,
        llm_cost_usd: 0,
        storage_gb_hours: 0,
        storage_cost_usd: 0,
        correction_usd: 0,
        total_cost_usd: 0.01975,
        reported_llm_calls: 0,
        reported_llm_input_tokens: 0,
        reported_llm_output_tokens: 0,
        reported_llm_cost_usd: 0,
      },
      {
        user_id: 'usage-owner',
        vcpu_seconds: 3600,
        gb_seconds: 7200,
        compute_cost_usd: 0.0395,
        llm_calls: 0,
        llm_input_tokens: 0,
        llm_output_tokens: 0,
        llm_cached_input_tokens: 0,
        llm_cache_write_input_tokens: 0,
        llm_cost_usd: 0,
        storage_gb_hours: 0,
        storage_cost_usd: 0,
        correction_usd: 0,
        total_cost_usd: 0.0395,
        reported_llm_calls: 0,
        reported_llm_input_tokens: 0,
        reported_llm_output_tokens: 0,
        reported_llm_cost_usd: 0,
      },
    ]);

    // A member: their own usage only, and no per-member view.
    const own = await get(memberKey);
    expect(own.body).toMatchObject({ org_id: orgId, scope: 'user' });
    expect(own.body.total).toMatchObject({ vcpu_seconds: 1800, compute_cost_usd: 0.01975 });
    const refused = await get(memberKey, '?group_by=user');
    expect(refused.status).toBe(403);

    // Another organization: nothing of this one, whatever it puts in the query.
    const strangerKey = await stack.newUser('usage-stranger');
    for (const q of ['', `?org_id=${orgId}`, '?group_by=user', `?group_by=user&org_id=${orgId}&user_id=usage-owner`]) {
      const res = await get(strangerKey, q);
      expect(res.status, q).toBe(200);
      expect(res.body.org_id).not.toBe(orgId);
      expect(res.body.items, q).toEqual([]);
      expect(JSON.stringify(res.body)).not.toContain('usage-owner');
    }
  }, 60_000);

  it('refuses bad dates and ranges with 422 naming the field; no credentials is 401', async () => {
    const key = await stack.newUser('usage-dates');
    const cases: [string, string][] = [
      ['?from=2026-13-01', 'from'],
      ['?from=yesterday', 'from'],
      ['?to=2026-02-30', 'to'],
      ['?from=2026-05-02&to=2026-05-01', 'to'],
      ['?from=2020-01-01&to=2026-01-01', 'to'],
      ['?group_by=week', 'group_by'],
    ];
    for (const [q, field] of cases) {
      const res = await get(key, q);
      expect(res.status, q).toBe(422);
      expect(res.body.detail[0].loc, q).toEqual(['query', field]);
    }
    expect((await stack.call('GET', '/api/v1/usage', { key: null })).status).toBe(401);
    const ok = await get(key, '?from=2026-01-01&to=2026-01-31');
    expect(ok.body).toMatchObject({ from: '2026-01-01', to: '2026-01-31', items: [] });
    expect(ok.body.total).toEqual({
      vcpu_seconds: 0,
      gb_seconds: 0,
      compute_cost_usd: 0,
      llm_calls: 0,
      llm_input_tokens: 0,
      llm_output_tokens: 0,
      llm_cached_input_tokens: 0,
      llm_cache_write_input_tokens: 0,
      llm_cost_usd: 0,
      storage_gb_hours: 0,
      storage_cost_usd: 0,
      correction_usd: 0,
      total_cost_usd: 0,
      reported_llm_calls: 0,
      reported_llm_input_tokens: 0,
      reported_llm_output_tokens: 0,
      reported_llm_cost_usd: 0,
    });
  });
});

/** A sandbox's storage records, in time order (pk `stor#<sandbox id>`). */
const storageRecords = async (sandboxId: string) =>
  ((
    await documentClient().send(
      new QueryCommand({
        TableName: tableName('usage'),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': usageKeys.storage(sandboxId) },
        ConsistentRead: true,
      }),
    )
  ).Items ?? []) as StorageRecord[];

describe('workspace storage as GB-hours', () => {
  it('a snapshot held is recorded when its bytes change, at the day end and at the delete, once however often; in the usage route, the FOCUS lines and the reconcile', async () => {
    const key = await stack.newUser('storage-a');
    const orgId = await stack.orgOf(key);
    const { id } = await runningSandbox(key);
    // The bridge as on AWS: snapshots whose sizes the test sets (HeadObject's ContentLength), a removal that asks nothing.
    const sizes = new Map<string, number>();
    const snapshots = {
      verify: async (_sandbox: string, k: string) => sizes.get(k) ?? null,
      prune: async () => 0,
    } as unknown as WorkspaceSnapshots;
    let clock = Date.parse('2026-03-04T10:00:00.400Z');
    const deps = (stack.services.sandboxBridge as unknown as { deps: SandboxServiceDeps }).deps;
    const bridge = new SandboxBridge({
      ...deps,
      snapshots,
      snapshotRemoval: { remove: async () => {} },
      now: () => new Date(clock),
    });
    const snapshot = (n: number, bytes: number) => {
      const k = `sandboxes/${id}/${String(n).padStart(13, '0')}-${'a'.repeat(16)}.tar.gz`;
      sizes.set(k, bytes);
      return k;
    };
    const k1 = snapshot(1, 2 ** 30);
    const k2 = snapshot(2, 2 ** 29);
    const rec = (await sandboxStore.get(id))!;
    // Reported three times at once: one holding, from the whole second.
    await Promise.all([1, 2, 3].map(() => bridge.snapshotComplete(rec, k1)));
    expect(await usage.storageHolding(id)).toMatchObject({
      sandboxId: id,
      orgId,
      userId: 'storage-a',
      bytes: 2 ** 30,
      since: '2026-03-04T10:00:00.000Z',
      key: k1,
    });
    expect(await storageRecords(id)).toEqual([]);
    // Two hours later a smaller snapshot, three times: the 1 GiB held is recorded once.
    clock += 2 * 3600_000;
    await Promise.all([1, 2, 3].map(() => bridge.snapshotComplete(rec, k2)));
    // An older snapshot reported late changes nothing.
    await bridge.snapshotComplete(rec, k1);
    const price = { region: 'us-east-1', gb_month_usd: '0.023', markup_percent: '0' };
    // 1 GB x 2 h / 730 h x 0.023 USD = 63.01 micro-USD.
    expect(await storageRecords(id)).toMatchObject([
      {
        from: '2026-03-04T10:00:00.000Z',
        to: '2026-03-04T12:00:00.000Z',
        day: '2026-03-04',
        seconds: 7200,
        bytes: 2 ** 30,
        mibSeconds: 1024 * 7200,
        storageMicroUsd: 63,
        price,
      },
    ]);
    // The day's end: the daily close records what is held up to midnight, once however often it runs.
    clock = Date.parse('2026-03-05T00:15:00Z');
    const meter = new DailyStorageMeter(usage, deps.prices!, dynamoStorageHoldings, () => new Date(clock));
    await Promise.all([meter.closeDay(), meter.closeDay(), meter.closeDay()]);
    expect(await meter.closeDay()).toBe(0);
    expect((await usage.storageHolding(id))?.since).toBe('2026-03-05T00:00:00.000Z');
    // The delete (after a pause): what was held since midnight, and the holding is gone.
    expect((await stack.call('POST', `/api/v1/sandboxes/${id}/pause`, { key })).status).toBe(200);
    clock = Date.parse('2026-03-05T06:00:00Z');
    // The delete's last step, on the state machine the bridge holds (so on its clock).
    const held = (bridge as unknown as { lifecycle: { finishDelete(r: SandboxRecord): Promise<boolean> } }).lifecycle;
    expect(await held.finishDelete((await sandboxStore.get(id))!)).toBe(true);
    expect(await usage.storageHolding(id)).toBeUndefined();
    const records = await storageRecords(id);
    // 0.5 GB x 12 h -> 189.04; 0.5 GB x 6 h -> 94.52 micro-USD.
    expect(records.map((r) => [r.from, r.to, r.bytes, r.mibSeconds, r.storageMicroUsd])).toEqual([
      ['2026-03-04T10:00:00.000Z', '2026-03-04T12:00:00.000Z', 2 ** 30, 7_372_800, 63],
      ['2026-03-04T12:00:00.000Z', '2026-03-05T00:00:00.000Z', 2 ** 29, 22_118_400, 189],
      ['2026-03-05T00:00:00.000Z', '2026-03-05T06:00:00.000Z', 2 ** 29, 11_059_200, 95],
    ]);

    // The usage route: GB-hours and their cost per day, in the total.
    const res = await stack.call('GET', '/api/v1/usage?from=2026-03-04&to=2026-03-05', { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.items.map((i: Record<string, number>) => [i.day, i.storage_gb_hours, i.storage_cost_usd])).toEqual([
      ['2026-03-04', 8, 0.000252],
      ['2026-03-05', 3, 0.000095],
    ]);
    expect(res.body.total).toMatchObject({
      storage_gb_hours: 11,
      storage_cost_usd: 0.000347,
      total_cost_usd: 0.000347,
    });
    // The FOCUS lines: one storage line per day, its cost the records' to the micro-USD.
    const focus = new FocusLedger();
    for await (const page of usage.dayRecords('2026-03-04', orgId)) focus.add(page);
    expect(focus.lines(new Map())).toMatchObject([
      {
        SkuId: 'storage/workspace-snapshots',
        BilledCost: '0.000252',
        ConsumedQuantity: '29491200',
        ConsumedUnit: 'MiB-Seconds',
        ServiceCategory: 'Storage',
        SubAccountId: 'storage-a',
      },
    ]);

    // A close killed between its record and the totals: the reconcile adds the record to them.
    const orphan = {
      sandboxId: id,
      orgId,
      userId: 'storage-a',
      day: '2026-03-06',
      from: '2026-03-06T00:00:00.000Z',
      to: '2026-03-06T01:00:00.000Z',
      seconds: 3600,
      bytes: 2 ** 30,
      mibSeconds: 1024 * 3600,
      storageMicroUsd: 32,
      price,
      recordedAt: '2026-03-06T01:00:00.000Z',
    };
    await documentClient().send(
      new PutCommand({ TableName: tableName('usage'), Item: storageRecordItem(orphan, 400) }),
    );
    expect(await usage.orgDays(orgId, '2026-03-06', '2026-03-06')).toEqual([]);
    const reconcile = new UsageReconcile({
      usage,
      sandboxes: sandboxStore,
      conversations: new DynamoConversationStore(),
      settledMs: 0,
      settleMs: 10,
    });
    const summary = await reconcile.run({ days: ['2026-03-06'] });
    expect(summary.totals.repaired).toBe(2);
    expect(await usage.orgDays(orgId, '2026-03-06', '2026-03-06')).toMatchObject([
      { storageRecords: 1, storageMibSeconds: 1024 * 3600, storageMicroUsd: 32 },
    ]);
    expect((await reconcile.run({ days: ['2026-03-06'] })).totals.repaired).toBe(0);
  }, 60_000);
});
