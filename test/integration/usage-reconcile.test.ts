import { randomUUID } from 'node:crypto';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNTER_ID, DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { DynamoLlmLedger } from '#shared/llm/dynamo-ledger.ts';
import type { LlmRecord } from '#shared/llm/ledger.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { DynamoUsageStore, usageKeys } from '#shared/usage/dynamo-usage-store.ts';
import { SETTLED_MS, UsageReconcile } from '#shared/usage/reconcile.ts';
import type { ComputeRecord, CorrectionRecord, DayTotals, UsageRecord } from '#shared/usage/usage-store.ts';
import { conversationRecord } from '#test/helpers/conversations.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/**
 * The daily reconcile (shared/usage/reconcile.ts) against the local stack's dynalite: a writer killed
 * between a record and its totals, a running-slot counter left one high, a conversation counter left
 * off, each repaired; a repair never loses a writer that races it (20 heartbeats on one organization's
 * day item), and a counter that moves between the reconcile's two looks is left alone.
 */
let stack: TestStack;
let usage: DynamoUsageStore;
let sandboxes: DynamoSandboxStore;
let conversations: DynamoConversationStore;
/** Fails the next `n` UpdateItem requests to the usage table (a writer that dies after its record's put). */
let failUsageUpdates = 0;

beforeAll(async () => {
  stack = await startTestStack({ sweepIntervalMs: 3_600_000 });
  usage = new DynamoUsageStore();
  sandboxes = new DynamoSandboxStore();
  conversations = new DynamoConversationStore();
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const table = (args.input as { TableName?: string }).TableName;
      if (context.commandName?.startsWith('Update') && table === tableName('usage') && failUsageUpdates > 0) {
        failUsageUpdates--;
        throw new Error('killed between the record and its totals');
      }
      return next(args);
    },
    { step: 'initialize', name: 'killUsageWriter' },
  );
}, 60_000);
afterAll(async () => {
  documentClient().middlewareStack.remove('killUsageWriter');
  await stack?.stop();
});

/** The reconcile as the scheduled function builds it, with a clock `aheadMs` ahead and short looks. */
const reconcile = (aheadMs = SETTLED_MS + 60_000, settleMs = 200) =>
  new UsageReconcile({ usage, sandboxes, conversations, now: () => new Date(Date.now() + aheadMs), settleMs });

/** A RUNNING sandbox record as the bridge reads it (the metering path needs no process). */
const running = (orgId: string, userId: string, runningAt: string): SandboxRecord => ({
  id: randomUUID().replaceAll('-', ''),
  userId,
  orgId,
  specId: 'default',
  status: 'RUNNING',
  version: 2,
  generation: 1,
  createdAt: runningAt,
  updatedAt: runningAt,
  lastActivityAt: runningAt,
  runningAt,
});

const FIELDS = ['seconds', 'factorSeconds', 'vcpuSeconds', 'gbSeconds', 'computeMicroUsd'] as const;

async function recordsOf(orgId: string, day: string): Promise<UsageRecord[]> {
  const all: UsageRecord[] = [];
  for await (const page of usage.dayRecords(day, orgId)) all.push(...page);
  return all;
}

/** The org's and each user's day totals equal the sums of the day's records, field by field. */
async function expectTotalsEqualRecords(orgId: string, day: string) {
  const records = await recordsOf(orgId, day);
  const compute = records.filter((r): r is ComputeRecord & { kind: 'compute' } => r.kind === 'compute');
  const llm = records.filter((r): r is LlmRecord & { kind: 'llm' } => r.kind === 'llm');
  const check = (total: DayTotals | undefined, c: typeof compute, l: typeof llm, what: string) => {
    for (const f of FIELDS) expect(Number(total?.[f] ?? 0), `${what} ${f}`).toBe(c.reduce((n, r) => n + r[f], 0));
    expect(Number(total?.records ?? 0), `${what} records`).toBe(c.length);
    expect(Number(total?.llmCalls ?? 0), `${what} llmCalls`).toBe(l.length);
    expect(Number(total?.llmInputTokens ?? 0), `${what} llmInputTokens`).toBe(l.reduce((n, r) => n + r.input, 0));
    expect(Number(total?.llmMicroUsd ?? 0), `${what} llmMicroUsd`).toBe(l.reduce((n, r) => n + r.costMicroUsd, 0));
    const corr = records.filter(
      (r) => r.kind === 'correction' && (what === 'org' || what === `user ${r.userId}`),
    ) as (CorrectionRecord & { kind: 'correction' })[];
    expect(Number(total?.correctionMicroUsd ?? 0), `${what} correctionMicroUsd`).toBe(
      corr.reduce((n, r) => n + r.microUsd, 0),
    );
  };
  check((await usage.orgDays(orgId, day, day))[0], compute, llm, 'org');
  const users = await usage.orgUserDays(orgId, day, day);
  for (const userId of new Set(records.map((r) => r.userId)))
    check(
      users.find((u) => u.userId === userId),
      compute.filter((r) => r.userId === userId),
      llm.filter((r) => r.userId === userId),
      `user ${userId}`,
    );
  const models = await usage.orgModelDays(orgId, day, day);
  for (const model of new Set(llm.map((r) => r.model)))
    check(
      models.find((m) => m.model === model),
      [],
      llm.filter((r) => r.model === model),
      `model ${model}`,
    );
  return records.length;
}

const llmRecord = (orgId: string, userId: string, at: string): LlmRecord => ({
  requestId: randomUUID(),
  orgId,
  userId,
  conversationId: 'c1',
  model: 'platform/test-model',
  upstreamModel: 'test-model',
  input: 1000,
  output: 200,
  cachedInput: 0,
  cacheWriteInput: 0,
  costMicroUsd: 4321,
  price: { input: 3, output: 15, markup: 0 },
  estimated: false,
  day: at.slice(0, 10),
  at,
});

describe('the daily reconcile repairs totals from their records', () => {
  it('a writer killed between the record and its totals: the reconcile makes the totals equal the records', async () => {
    const key = await stack.newUser('rec-a');
    const orgId = await stack.orgOf(key);
    const bridge = stack.services.sandboxBridge;
    // Today (UTC), as the LLM records written now are.
    const start = Math.max(Date.now() - 3_600_000, Date.parse(new Date().toISOString().slice(0, 10)) + 1000);
    const sbx = running(orgId, 'rec-a', new Date(start).toISOString());
    // Two heartbeats whole, then one whose writer dies after the record's put (both totals lost),
    // then one that loses only the organization's total.
    expect(await bridge.accrue(sbx, new Date(start + 60_000))).toBeDefined();
    expect(await bridge.accrue(sbx, new Date(start + 120_000))).toBeDefined();
    failUsageUpdates = 2;
    expect(await bridge.accrue(sbx, new Date(start + 180_000))).toBeUndefined();
    failUsageUpdates = 0;
    // The next heartbeat starts where the lost one's record ended: the record is there, its totals are not.
    const crashed = await usage.computeRecords(sbx.id, 1);
    expect(crashed).toHaveLength(3);
    expect(await bridge.accrue(sbx, new Date(start + 240_000))).toBeDefined();
    // A platform LLM call whose writer died after its record's put (its user, org and model totals lost).
    const ledger = new DynamoLlmLedger();
    failUsageUpdates = 1;
    await expect(ledger.record(llmRecord(orgId, 'rec-a', new Date().toISOString()))).rejects.toThrow();
    failUsageUpdates = 0;
    // And one written through the table alone, as if the gateway died before any total.
    const day = new Date(start).toISOString().slice(0, 10);
    const dropped = llmRecord(orgId, 'rec-a', new Date().toISOString());
    await documentClient().send(
      new PutCommand({
        TableName: tableName('usage'),
        Item: {
          pk: `llm#${dropped.requestId}`,
          sk: 'llm',
          kind: 'llm',
          recordKey: usageKeys.recordKey(orgId, dropped.at, `llm#${dropped.requestId}`),
          ...dropped,
        },
      }),
    );
    // An operator's correction whose writer died after its record: its user and organization totals lost.
    failUsageUpdates = 1;
    const correction = {
      id: `corr_${randomUUID().replaceAll('-', '')}`,
      orgId,
      userId: 'rec-a',
      day,
      microUsd: -1234,
      reason: 'a test correction',
      operator: 'operator:op',
      at: new Date().toISOString(),
    };
    await expect(usage.recordCorrection(correction)).rejects.toThrow();
    failUsageUpdates = 0;
    const [before] = await usage.orgDays(orgId, day, day);
    expect(before!.records).toBe(3);
    expect(before!.correctionMicroUsd).toBeUndefined();
    await expect(expectTotalsEqualRecords(orgId, day)).rejects.toThrow();

    // Within the settled time nothing is touched (a writer could still be on its way).
    const early = await reconcile(0).run({ days: [day] });
    expect(early.totals.repaired).toBe(0);
    expect(early.totals.busy).toBeGreaterThan(0);

    const summary = await reconcile().run({ days: [day] });
    expect(summary.totals.repaired).toBeGreaterThanOrEqual(3);
    expect(summary.totals.raced).toBe(0);
    expect(await expectTotalsEqualRecords(orgId, day)).toBe(7);
    const [after] = await usage.orgDays(orgId, day, day);
    expect(after).toMatchObject({ corrections: 1, correctionMicroUsd: -1234 });
    // Written again (its id): nothing more.
    expect(await usage.recordCorrection(correction)).toBe(false);
    // A second run finds nothing to do.
    const again = await reconcile().run({ days: [day] });
    expect(again.totals.repaired).toBe(0);
    // The usage route reads the repaired totals.
    const res = await stack.call('GET', `/api/v1/usage?from=${day}&to=${day}`, { key });
    expect(res.status, res.text).toBe(200);
    const records = await usage.computeRecords(sbx.id, 1);
    expect(JSON.stringify(res.body)).toContain(`"vcpu_seconds":${records.reduce((n, r) => n + r.vcpuSeconds, 0)}`);
  }, 60_000);

  it('20 heartbeats racing the reconcile on one organization-day item: no writer lost, totals equal the records', async () => {
    const key = await stack.newUser('rec-b');
    const orgId = await stack.orgOf(key);
    const bridge = stack.services.sandboxBridge;
    // Within one UTC day whatever the hour: the day's start plus a few minutes.
    const start = Date.parse(new Date().toISOString().slice(0, 10)) + 120_000;
    // A day item already short: one heartbeat whose writer died after its record's put.
    const lost = running(orgId, 'rec-b', new Date(start - 60_000).toISOString());
    failUsageUpdates = 2;
    await bridge.accrue(lost, new Date(start));
    failUsageUpdates = 0;
    // 20 sandboxes of the organization heartbeat 4 times each, all at once, while the reconcile runs over
    // and over: the hot items are written to within the settled time, so it leaves them alone.
    const fleet = Array.from({ length: 20 }, (_, i) => running(orgId, `rec-b${i % 4}`, new Date(start).toISOString()));
    let racing = true;
    const runs: { totals: { repaired: number } }[] = [];
    const reconciler = (async () => {
      while (racing) runs.push(await reconcile(0).run({ days: [new Date(start).toISOString().slice(0, 10)] }));
    })();
    await Promise.all(
      fleet.map(async (sbx) => {
        for (let beat = 1; beat <= 4; beat++) await bridge.accrue(sbx, new Date(start + beat * 30_000));
      }),
    );
    racing = false;
    await reconciler;
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) expect(run.totals.repaired).toBe(0);
    const day = new Date(start).toISOString().slice(0, 10);
    // Every heartbeat's record is there and, after the settled time, the totals are exactly the records.
    for (const sbx of fleet) expect(await usage.computeRecords(sbx.id, 1)).toHaveLength(4);
    const after = await reconcile().run({ days: [day] });
    expect(after.totals.repaired).toBeGreaterThanOrEqual(2);
    expect(await expectTotalsEqualRecords(orgId, day)).toBe(81);
  }, 60_000);

  it('a repair loses to a writer that adds between its read and its write, and changes nothing', async () => {
    const orgId = `org-race-${randomUUID()}`;
    const day = new Date().toISOString().slice(0, 10);
    const bridge = stack.services.sandboxBridge;
    const start = Date.now() - 600_000;
    const sbx = running(orgId, 'rec-c', new Date(start).toISOString());
    await bridge.accrue(sbx, new Date(start + 60_000));
    const [seen] = await usage.orgDays(orgId, day, day);
    await bridge.accrue(sbx, new Date(start + 120_000));
    expect(await usage.repairTotals({ orgId, day }, seen, { seconds: 1000, records: 0 })).toBe(false);
    expect(await expectTotalsEqualRecords(orgId, day)).toBe(2);
  });
});

describe('the daily reconcile recounts the counters that can drift', () => {
  it('a running-slot counter left one high by a start that died after its reserve comes back down', async () => {
    const key = await stack.newUser('rec-slots');
    const orgId = await stack.orgOf(key);
    // A start took a slot and died before writing its sandbox: nothing holds it.
    expect((await sandboxes.reserveRunning(orgId, 5)).granted).toBe(true);
    expect(await sandboxes.runningOf(orgId)).toBe(1);
    const summary = await reconcile().run({ days: [] });
    expect(summary.slots.repaired).toBeGreaterThanOrEqual(1);
    expect(await sandboxes.runningOf(orgId)).toBe(0);
  }, 30_000);

  it('a counter that moves between the two looks is left alone (a start in flight is never undone)', async () => {
    const key = await stack.newUser('rec-slots2');
    const orgId = await stack.orgOf(key);
    await sandboxes.reserveRunning(orgId, 5);
    const run = reconcile(SETTLED_MS + 60_000, 1_000).run({ days: [] });
    // A live start takes a slot during the reconcile's settle.
    await new Promise((r) => setTimeout(r, 300));
    await sandboxes.reserveRunning(orgId, 5);
    const summary = await run;
    expect(summary.slots.busy).toBeGreaterThanOrEqual(1);
    expect(await sandboxes.runningOf(orgId)).toBe(2);
  }, 30_000);

  it('a conversation counter left one high (a create that died after its reserve) or one low is recounted', async () => {
    const userId = `rec-conv-${randomUUID().slice(0, 8)}`;
    for (let i = 0; i < 3; i++) expect(await conversations.create(conversationRecord(userId), 10)).toBe(true);
    expect(await conversations.count(userId, {})).toBe(3);
    const bump = (n: number) =>
      documentClient().send(
        new UpdateCommand({
          TableName: tableName('conversations'),
          Key: { userId, id: COUNTER_ID },
          UpdateExpression: 'ADD conversations :n',
          ExpressionAttributeValues: { ':n': n },
        }),
      );
    // The create's reserve landed, its put never did.
    await bump(1);
    expect(await conversations.count(userId, {})).toBe(4);
    await reconcile().run({ days: [] });
    expect(await conversations.count(userId, {})).toBe(3);
    // Left one low (e.g. a counter restored from a backup): counted up.
    await bump(-1);
    await reconcile().run({ days: [] });
    expect(await conversations.count(userId, {})).toBe(3);
  }, 30_000);
});
