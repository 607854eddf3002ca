import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { exportKey, previousDay } from '#shared/billing/export.ts';
import { CSV_COLUMNS } from '#shared/billing/focus.ts';
import { llmCharge } from '#shared/llm/cost.ts';
import { DynamoLlmLedger } from '#shared/llm/dynamo-ledger.ts';
import type { PlatformModel } from '#shared/llm/platform-models.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { computeCharge, DEFAULT_PRICES_CONFIG, parsePrices } from '#shared/usage/prices.ts';
import { csvRecords, microOf, parseCsv } from '#test/helpers/csv.ts';
import { bearer, OPERATOR_AUDIENCE as AUD, useOperatorStack } from '#test/helpers/operator-stack.ts';
import { waitFor } from '#test/helpers/wait.ts';

/**
 * The FOCUS export over HTTP against the local stack: the ledger written through its stores (compute records
 * as the heartbeat writes them, platform-LLM records as the gateway does), the operators' route writing the
 * file under DATA_DIR/billing-exports/, the file read back: its BilledCost equal to the ledger's own totals to
 * the micro-USD, a hostile organization name intact and defused, a re-run the same bytes; who may ask, and bad
 * periods; the daily run at start.
 */
const ops = useOperatorStack();
const { operator } = ops;
let usage: DynamoUsageStore;
beforeAll(() => {
  usage = new DynamoUsageStore();
});
const price = parsePrices(DEFAULT_PRICES_CONFIG, 't').compute('us-east-1', false);
const spot = parsePrices(DEFAULT_PRICES_CONFIG, 't').compute('us-east-1', true);
const model = {
  model: 'platform/claude-sonnet',
  usd_per_mtok: { input: 3, output: 15, cached_input: 0.3 },
  markup: 0.1,
} as unknown as PlatformModel;

let n = 0;
async function compute(orgId: string, userId: string, day: string, seconds: number, isSpot = false) {
  const p = isSpot ? spot : price;
  const c = computeCharge(seconds, 1024, 2048, p);
  const from = `${day}T10:00:${String(n++ % 60).padStart(2, '0')}.000Z`;
  expect(
    await usage.recordCompute({
      sandboxId: `sbx-${n}`,
      generation: 1,
      orgId,
      userId,
      specId: 'default',
      day,
      from,
      to: from,
      seconds,
      factorSeconds: seconds,
      vcpuSeconds: c.vcpuSeconds,
      gbSeconds: c.gbSeconds,
      computeMicroUsd: c.costMicroUsd,
      cpuUnits: 1024,
      memoryMiB: 2048,
      resourceFactor: 1,
      price: p,
      recordedAt: from,
    }),
  ).toBeDefined();
}
async function llm(orgId: string, userId: string, day: string, input: number, output: number, cachedInput: number) {
  const t = { input, output, cachedInput, cacheWriteInput: 0 };
  expect(
    await new DynamoLlmLedger().record({
      requestId: `req-${n++}`,
      orgId,
      userId,
      conversationId: 'conv',
      model: model.model,
      upstreamModel: 'claude',
      ...t,
      costMicroUsd: llmCharge(t, model),
      price: { ...model.usd_per_mtok, markup: model.markup },
      estimated: false,
      day,
      at: `${day}T11:00:00.000Z`,
    }),
  ).toBeDefined();
}

/** The ledger's own totals (compute + platform LLM, micro-USD) of an organization over the days. */
async function ledgerTotal(orgId: string, from: string, to: string): Promise<bigint> {
  let sum = 0n;
  for (const d of await usage.orgDays(orgId, from, to)) sum += BigInt(d.computeMicroUsd) + BigInt(d.llmMicroUsd ?? 0);
  return sum;
}

describe('billing export (FOCUS 1.2) over the local stack', () => {
  it('writes yesterday at start (the daily run), a header alone when nothing was used', async () => {
    const day = previousDay(new Date());
    const file = join(ops.stack.dataDir, 'billing-exports', exportKey(day, day));
    await waitFor('the daily export at start', () => existsSync(file), { until: Boolean, timeoutMs: 20_000 });
    expect(parseCsv(readFileSync(file, 'utf8'))).toEqual([[...CSV_COLUMNS]]);
  });

  it('writes the period to the folder; BilledCost sums to the ledger to the micro-USD; a re-run is the same file', async () => {
    const aliceKey = await ops.stack.newUser('alice-export');
    const bobKey = await ops.stack.newUser('bob-export');
    const orgA = await ops.stack.orgOf(aliceKey);
    const orgB = await ops.stack.orgOf(bobKey);
    // A hostile owner names their organization to break the file or run a formula in the operator's spreadsheet.
    const hostile = '=HYPERLINK("http://evil"),"x"\nnext, line';
    const store = new DynamoAccountStore();
    const org = (await store.getOrg(orgA))!;
    expect(await store.replaceOrg({ ...org, name: hostile })).toBe(true);

    // Across a month's end: the billing period follows each day's month.
    await compute(orgA, 'alice-export', '2025-01-31', 3600);
    await compute(orgA, 'alice-export', '2025-01-31', 17, true);
    await compute(orgA, 'alice-export', '2025-02-01', 59);
    await compute(orgB, 'bob-export', '2025-02-01', 1234);
    await llm(orgA, 'alice-export', '2025-01-31', 12_345, 678, 9_000);
    await llm(orgB, 'bob-export', '2025-02-01', 1, 1, 0);
    // Outside the period: not in the file.
    await compute(orgA, 'alice-export', '2025-02-02', 600);

    const op = await operator();
    const res = await ops.stack.call('POST', '/api/v1/admin/billing/exports', {
      ...op,
      body: { from: '2025-01-31', to: '2025-02-01' },
    });
    expect(res.status, res.text).toBe(200);
    const file = join(ops.stack.dataDir, 'billing-exports', 'focus-1.2', '2025-01-31_2025-02-01.csv');
    expect(res.body).toMatchObject({
      from: '2025-01-31',
      to: '2025-02-01',
      key: 'focus-1.2/2025-01-31_2025-02-01.csv',
    });
    expect(res.body.location).toBe(file);
    expect(res.body.records).toBe(6);
    const csv = readFileSync(file, 'utf8');
    const rows = csvRecords(csv);
    expect(res.body.lines).toBe(rows.length);
    const sum = (org: string) =>
      rows.filter((r) => r.BillingAccountId === org).reduce((a, r) => a + microOf(r.BilledCost!), 0n);
    const a = await ledgerTotal(orgA, '2025-01-31', '2025-02-01');
    const b = await ledgerTotal(orgB, '2025-01-31', '2025-02-01');
    expect(a).toBeGreaterThan(0n);
    expect(sum(orgA)).toBe(a);
    expect(sum(orgB)).toBe(b);
    expect(microOf(res.body.billed_cost_usd)).toBe(a + b);
    // Every line of the period's days; none of the day after.
    expect(new Set(rows.map((r) => r.ChargePeriodStart))).toEqual(
      new Set(['2025-01-31T00:00:00Z', '2025-02-01T00:00:00Z']),
    );
    const jan = rows.find((r) => r.ChargePeriodStart === '2025-01-31T00:00:00Z')!;
    expect(jan).toMatchObject({ BillingPeriodStart: '2025-01-01T00:00:00Z', BillingPeriodEnd: '2025-02-01T00:00:00Z' });
    // The name is the organization's, whole; a spreadsheet reads it as text.
    expect(new Set(rows.filter((r) => r.BillingAccountId === orgA).map((r) => r.BillingAccountName))).toEqual(
      new Set([`'${hostile}`]),
    );
    expect(rows.filter((r) => r.SubAccountId === 'alice-export').every((r) => r.BillingAccountId === orgA)).toBe(true);
    expect(new Set(rows.map((r) => r.SkuId))).toEqual(
      new Set([
        'compute/vcpu/on-demand',
        'compute/memory/on-demand',
        'compute/vcpu/spot',
        'compute/memory/spot',
        'llm/platform/claude-sonnet/input',
        'llm/platform/claude-sonnet/output',
        'llm/platform/claude-sonnet/cached-input',
      ]),
    );
    const tokens = rows
      .filter((r) => r.ConsumedUnit === 'Tokens' && r.BillingAccountId === orgA)
      .reduce((x, r) => x + Number(r.ConsumedQuantity), 0);
    expect(tokens).toBe(12_345 + 678 + 9_000);

    const again = await ops.stack.call('POST', '/api/v1/admin/billing/exports', {
      ...op,
      body: { from: '2025-01-31', to: '2025-02-01' },
    });
    expect(again.status).toBe(200);
    expect(readFileSync(file, 'utf8')).toBe(csv);
  });

  it('is for operators only: a user, an organization owner, no credentials', async () => {
    const key = await ops.stack.newUser('mallory-export');
    const body = { from: '2025-01-31', to: '2025-01-31' };
    const owner = await ops.stack.call('POST', '/api/v1/admin/billing/exports', { key, body });
    expect(owner.status).toBe(403);
    expect(owner.body).toEqual({ detail: 'Only an operator can do this' });
    expect((await ops.stack.call('POST', '/api/v1/admin/billing/exports', { key: null, body })).status).toBe(401);
    // A person who is no operator, signed in with a token of the same issuer.
    const person = bearer(await ops.idp.sign({ sub: 'eve', aud: AUD, email: 'eve@example.com', email_verified: true }));
    expect((await ops.stack.call('POST', '/api/v1/admin/billing/exports', { ...person, body })).status).toBe(403);
  });

  it('refuses bad periods with 422 naming the field, never a 500', async () => {
    const op = await operator();
    const cases: [unknown, string][] = [
      [{ to: '2025-01-31' }, 'from'],
      [{ from: '2025-01-31' }, 'to'],
      [{ from: '2025-02-30', to: '2025-03-01' }, 'from'],
      [{ from: '2025/01/01', to: '2025-01-02' }, 'from'],
      [{ from: '2025-01-31', to: '2025-01-30' }, 'to'],
      [{ from: '2025-01-01', to: '2025-02-01' }, 'to'],
      [{ from: '2025-01-01', to: '2999-01-01' }, 'to'],
      [{ from: '../../etc', to: '2025-01-02' }, 'from'],
      [{ from: 20250101, to: '2025-01-02' }, 'from'],
      [{ from: '2025-01-01', to: '2025-01-02', bucket: 'other' }, 'bucket'],
    ];
    for (const [body, field] of cases) {
      const res = await ops.stack.call('POST', '/api/v1/admin/billing/exports', { ...op, body });
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(422);
      // A field's own error names it in `loc`; an unknown one is named in the body's message (zod's strict object).
      const details = res.body.detail as { loc: unknown[]; msg: string }[];
      if (field === 'bucket') expect(details.map((d) => d.msg).join(' ')).toContain('bucket');
      else expect(details.map((d) => d.loc)).toContainEqual(['body', field]);
      expect(JSON.stringify(res.body.detail)).not.toMatch(/Internal/);
    }
    // 31 days is the most one request writes.
    const ok = await ops.stack.call('POST', '/api/v1/admin/billing/exports', {
      ...op,
      body: { from: '2025-01-01', to: '2025-01-31' },
    });
    expect(ok.status, ok.text).toBe(200);
  });
});
