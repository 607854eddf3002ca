import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allocate,
  CSV_COLUMNS,
  CUSTOM_COLUMNS,
  csvField,
  FOCUS_COLUMNS,
  FocusLedger,
  focusCsv,
  microUsdDecimal,
} from '#shared/billing/focus.ts';
import { llmCharge } from '#shared/llm/cost.ts';
import type { PlatformModel } from '#shared/llm/platform-models.ts';
import { computeCharge, type ComputePrice, storageCharge } from '#shared/usage/prices.ts';
import type { UsageRecord } from '#shared/usage/usage-store.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { csvRecords, microOf, parseCsv } from '#test/helpers/csv.ts';

/** The FOCUS 1.2 column list, taken from the specification (test/fixtures/focus-1.2-columns.json says where from). */
const spec = JSON.parse(readFileSync(join(PROJECT_ROOT, 'test/fixtures/focus-1.2-columns.json'), 'utf8')) as {
  columns: {
    name: string;
    feature_level: string;
    allows_nulls: boolean;
    data_type: string;
    allowed_values?: string[];
  }[];
};
const specColumn = new Map(spec.columns.map((c) => [c.name, c]));

/** A seeded generator, so a failure replays. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ORG_A = 'org_aaaaaaaaaaaaaaaaaaaaaaaa';
const ORG_B = 'org_bbbbbbbbbbbbbbbbbbbbbbbb';

/** Records as the heartbeat and the gateway write them: costs from the real charge functions. */
function ledger(count: number, seed: number): UsageRecord[] {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const out: UsageRecord[] = [];
  for (let i = 0; i < count; i++) {
    const orgId = pick([ORG_A, ORG_B]);
    const userId = pick(['alice', 'bob', 'carol@example.com']);
    const day = pick(['2026-10-31', '2026-11-01', '2026-11-02']);
    const kind = rand();
    if (kind >= 0.94) {
      // An operator's correction: signed, of a member or of the organization, written within the
      // month of its day or after it ended (a correction to a previously invoiced period).
      out.push({
        kind: 'correction',
        id: `corr${i}`,
        orgId,
        userId: rand() < 0.5 ? null : userId,
        day,
        microUsd: Math.floor(rand() * 20_000_000) - 10_000_000,
        reason: pick(['credit for an outage', 'refund, "quoted"']),
        operator: 'operator:op',
        at: pick([`${day}T12:00:00.000Z`, '2026-12-01T00:00:00.000Z']),
      });
    } else if (kind < 0.1) {
      // Workspace storage: the bytes of a snapshot held.
      const price = {
        region: pick(['us-east-1', 'eu-west-1']),
        gb_month_usd: '0.023',
        markup_percent: pick(['0', '12.5']),
      };
      const seconds = 1 + Math.floor(rand() * 86_399);
      const bytes = 1 + Math.floor(rand() * 2 ** 31);
      const c = storageCharge(bytes, seconds, price);
      out.push({
        kind: 'storage',
        sandboxId: `sbx${i}`,
        orgId,
        userId,
        day,
        from: `${day}T00:00:00.000Z`,
        to: `${day}T00:01:00.000Z`,
        seconds,
        bytes,
        mibSeconds: c.mibSeconds,
        storageMicroUsd: c.costMicroUsd,
        price,
        recordedAt: `${day}T00:01:00.000Z`,
      });
    } else if (kind < 0.6) {
      const price: ComputePrice = {
        region: pick(['us-east-1', 'eu-west-1']),
        spot: rand() < 0.4,
        vcpu_hour_usd: pick(['0.04048', '0.01244', '0.123456789']),
        gb_hour_usd: pick(['0.004445', '0.00137', '0.000001']),
        markup_percent: pick(['0', '12.5', '33.333']),
        // An AWS task's public IPv4 address, priced in (a local process has none).
        ...(rand() < 0.5 ? { ipv4_hour_usd: pick(['0.005', '0.0071']) } : {}),
      };
      const seconds = 1 + Math.floor(rand() * 3600);
      const cpuUnits = pick([256, 512, 1024, 2048, 4096]);
      const memoryMiB = pick([512, 2048, 3072, 8192]);
      const c = computeCharge(seconds, cpuUnits, memoryMiB, price);
      out.push({
        kind: 'compute',
        sandboxId: `sbx${i}`,
        generation: 1,
        orgId,
        userId,
        specId: 'default',
        day,
        from: `${day}T00:00:00.000Z`,
        to: `${day}T00:01:00.000Z`,
        seconds,
        factorSeconds: seconds,
        vcpuSeconds: c.vcpuSeconds,
        gbSeconds: c.gbSeconds,
        computeMicroUsd: c.costMicroUsd,
        cpuUnits,
        memoryMiB,
        resourceFactor: 1,
        price,
        recordedAt: `${day}T00:01:00.000Z`,
      });
    } else {
      const model = {
        model: pick(['platform/claude-sonnet', 'platform/gpt,"quoted"']),
        usd_per_mtok: pick([
          { input: 3, output: 15, cached_input: 0.3, cache_write_input: 3.75 },
          { input: 0.15, output: 0.6 },
        ]),
        markup: pick([0, 0.1, 0.275]),
      } as unknown as PlatformModel;
      const t = {
        input: Math.floor(rand() * 50_000),
        output: Math.floor(rand() * 5_000),
        cachedInput: rand() < 0.5 ? 0 : Math.floor(rand() * 100_000),
        cacheWriteInput: rand() < 0.7 ? 0 : Math.floor(rand() * 10_000),
      };
      out.push({
        kind: 'llm',
        requestId: `req${i}`,
        orgId,
        userId,
        conversationId: 'c1',
        model: model.model,
        upstreamModel: 'up',
        ...t,
        costMicroUsd: llmCharge(t, model),
        price: { ...model.usd_per_mtok, markup: model.markup },
        estimated: rand() < 0.1,
        day,
        at: `${day}T00:00:01.000Z`,
      });
    }
  }
  return out;
}

const recordCost = (r: UsageRecord) =>
  BigInt(
    r.kind === 'compute'
      ? r.computeMicroUsd
      : r.kind === 'llm'
        ? r.costMicroUsd
        : r.kind === 'storage'
          ? r.storageMicroUsd
          : r.microUsd,
  );

describe('FOCUS 1.2 export', () => {
  it('emits every mandatory column of the specification, only columns it defines, in its order; ours prefixed x_', () => {
    const mandatory = spec.columns.filter((c) => c.feature_level === 'Mandatory').map((c) => c.name);
    expect(mandatory).toHaveLength(21);
    for (const name of mandatory) expect(FOCUS_COLUMNS).toContain(name);
    for (const name of FOCUS_COLUMNS) expect(specColumn.has(name), `${name} is a FOCUS 1.2 column`).toBe(true);
    // The specification lists its columns alphabetically, custom ones after (column handling).
    const order = spec.columns.map((c) => c.name);
    expect([...FOCUS_COLUMNS]).toEqual(order.filter((n) => (FOCUS_COLUMNS as readonly string[]).includes(n)));
    for (const name of CUSTOM_COLUMNS) expect(name).toMatch(/^x_[A-Z][A-Za-z]*$/);
    expect(CSV_COLUMNS.slice(-CUSTOM_COLUMNS.length)).toEqual([...CUSTOM_COLUMNS]);
  });

  it("writes each line's values as the specification's types, formats, nullability and allowed values say", () => {
    const l = new FocusLedger();
    l.add(ledger(400, 7));
    const lines = l.lines(new Map([[ORG_A, 'Acme, "Inc."\nR&D']]));
    expect(lines.length).toBeGreaterThan(20);
    for (const line of lines) {
      for (const name of FOCUS_COLUMNS) {
        const c = specColumn.get(name)!;
        const v = line[name];
        if (v === null) {
          expect(c.allows_nulls, `${name} may be null`).toBe(true);
          continue;
        }
        // Null handling: never an empty string for "no value".
        expect(v, name).not.toBe('');
        if (c.data_type === 'Decimal') expect(v, name).toMatch(/^-?\d+(\.\d+)?$/);
        if (c.data_type === 'Date/Time') expect(v, name).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
        if (c.allowed_values) expect(c.allowed_values, `${name} = ${v}`).toContain(v);
      }
      if (line.ChargeCategory === 'Adjustment') {
        // A correction: money, no quantity, a line of its own; "Correction" only when written after its
        // billing period (the month of the day it applies to) ended, else null.
        expect(line.ChargeDescription).toMatch(/^Correction: /);
        expect(line.ChargeFrequency).toBe('One-Time');
        for (const name of ['ConsumedQuantity', 'ConsumedUnit', 'PricingQuantity', 'PricingUnit', 'SkuId'] as const)
          expect(line[name], name).toBeNull();
        expect(line.SubAccountType).toBe(line.SubAccountId === null ? null : 'User');
        // Invoiced in the month it was written when that is after its day's month: here December.
        expect(line.BillingPeriodStart).toBe(
          line.ChargeClass === 'Correction'
            ? '2026-12-01T00:00:00Z'
            : `${line.ChargePeriodStart!.slice(0, 7)}-01T00:00:00Z`,
        );
        continue;
      }
      expect(line.ChargeClass).toBeNull();
      // Usage lines: what the specification requires to be set when ChargeCategory is Usage.
      for (const name of ['ConsumedQuantity', 'ConsumedUnit', 'PricingQuantity', 'PricingUnit', 'SkuId'] as const)
        expect(line[name], name).not.toBeNull();
      expect(line.BillingCurrency).toBe('USD');
      // The charge period is one UTC day, its end exclusive; the billing period is its calendar month.
      const start = Date.parse(line.ChargePeriodStart!);
      expect(Date.parse(line.ChargePeriodEnd!) - start).toBe(86_400_000);
      expect(Date.parse(line.BillingPeriodStart!)).toBeLessThanOrEqual(start);
      expect(Date.parse(line.BillingPeriodEnd!)).toBeGreaterThan(start);
      expect(line.BillingPeriodStart!.slice(0, 7)).toBe(line.ChargePeriodStart!.slice(0, 7));
      expect(line.SubAccountId).not.toBeNull();
      for (const cost of ['EffectiveCost', 'ListCost', 'ContractedCost'] as const)
        expect(line[cost]).toBe(line.BilledCost);
    }
    // Corrections to a previously invoiced period (October's and November's, written on 1 December) and
    // within the current one (written on their own day).
    const corrections = lines.filter((x) => x.ChargeCategory === 'Adjustment');
    expect(corrections.filter((x) => x.ChargeClass === 'Correction').length).toBeGreaterThan(0);
    expect(corrections.filter((x) => x.ChargeClass === null).length).toBeGreaterThan(0);
    expect(corrections.filter((x) => x.SubAccountId === null).length).toBeGreaterThan(0);
    expect(lines.filter((x) => x.BillingPeriodStart === '2026-10-01T00:00:00Z')[0]?.BillingPeriodEnd).toBe(
      '2026-11-01T00:00:00Z',
    );
  });

  it("sums to the ledger to the micro-USD: per organization, per day, and each line's quantity", () => {
    for (const seed of [1, 2, 3]) {
      const records = ledger(600, seed);
      const l = new FocusLedger();
      // A page at a time, as dayRecords gives them.
      for (let i = 0; i < records.length; i += 97) l.add(records.slice(i, i + 97));
      const rows = csvRecords(focusCsv(l.lines(new Map())));
      const sum = (xs: Iterable<bigint>) => [...xs].reduce((a, b) => a + b, 0n);
      expect(sum(rows.map((r) => microOf(r.BilledCost!)))).toBe(sum(records.map(recordCost)));
      expect(BigInt(l.recordsMicroUsd)).toBe(sum(records.map(recordCost)));
      for (const org of [ORG_A, ORG_B])
        for (const day of ['2026-10-31', '2026-11-01', '2026-11-02']) {
          const lineSum = sum(
            rows
              .filter((r) => r.BillingAccountId === org && r.ChargePeriodStart === `${day}T00:00:00Z`)
              .map((r) => microOf(r.BilledCost!)),
          );
          expect(lineSum).toBe(sum(records.filter((r) => r.orgId === org && r.day === day).map(recordCost)));
        }
      // Quantities: vCPU-seconds and GB-seconds as recorded; each token kind as counted.
      const qty = (unit: string) =>
        sum(rows.filter((r) => r.ConsumedUnit === unit).map((r) => BigInt(r.ConsumedQuantity!)));
      const computes = records.filter((r) => r.kind === 'compute');
      const llms = records.filter((r) => r.kind === 'llm');
      expect(qty('vCPU-Seconds')).toBe(sum(computes.map((r) => BigInt(r.vcpuSeconds))));
      expect(qty('GB-Seconds')).toBe(sum(computes.map((r) => BigInt(r.gbSeconds))));
      expect(qty('Tokens')).toBe(sum(llms.map((r) => BigInt(r.input + r.output + r.cachedInput + r.cacheWriteInput))));
      // The public IPv4 seconds of the records priced with one; storage in MiB-seconds.
      const withIpv4 = computes.filter((r) => r.price.ipv4_hour_usd !== undefined);
      expect(withIpv4.length).toBeGreaterThan(0);
      expect(qty('IPv4-Seconds')).toBe(sum(withIpv4.map((r) => BigInt(r.seconds))));
      const stored = records.filter((r) => r.kind === 'storage');
      expect(stored.length).toBeGreaterThan(0);
      expect(qty('MiB-Seconds')).toBe(sum(stored.map((r) => BigInt(r.mibSeconds))));
      expect(sum(rows.map((r) => BigInt(r.x_RecordCount!)))).toBeGreaterThanOrEqual(BigInt(records.length));
    }
  });

  it('splits a rounded cost over its parts exactly (half-even each, the rest on the largest)', () => {
    expect(
      allocate(10, [
        { n: 25n, d: 10n },
        { n: 75n, d: 10n },
      ]),
    ).toEqual([2, 8]);
    expect(
      allocate(3, [
        { n: 1n, d: 2n },
        { n: 1n, d: 2n },
        { n: 1n, d: 2n },
      ]),
    ).toEqual([3, 0, 0]);
    expect(allocate(0, [{ n: 0n, d: 1n }])).toEqual([0]);
    const rand = rng(11);
    for (let i = 0; i < 2000; i++) {
      const parts = [0, 1, 2].map(() => ({
        n: BigInt(Math.floor(rand() * 1e9)),
        d: BigInt(1 + Math.floor(rand() * 1e4)),
      }));
      const exact = parts.reduce((a, p) => a + Number(p.n) / Number(p.d), 0);
      const total = Math.round(exact);
      const got = allocate(total, parts);
      expect(got.reduce((a, b) => a + b, 0)).toBe(total);
      for (const x of got) expect(x).toBeGreaterThanOrEqual(0);
    }
  });

  it('renders micro-USD as exact decimals, never through a float', () => {
    expect(microUsdDecimal(0)).toBe('0.000000');
    expect(microUsdDecimal(1)).toBe('0.000001');
    expect(microUsdDecimal(-5)).toBe('-0.000005');
    expect(microUsdDecimal(1_234_567)).toBe('1.234567');
    expect(microUsdDecimal(9_007_199_254_740_993n)).toBe('9007199254.740993');
  });

  it('quotes commas, quotes and line breaks (RFC 4180), and defuses spreadsheet formulas in names people choose', () => {
    expect(csvField(null)).toBe('');
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\r\nlines')).toBe('"two\r\nlines"');
    expect(csvField('=HYPERLINK("http://x")', true)).toBe(`"'=HYPERLINK(""http://x"")"`);
    expect(csvField('-5', false)).toBe('-5');
    const l = new FocusLedger();
    l.add(ledger(50, 5));
    const hostile = 'Evil, "Corp"\r\n=cmd|\' /C calc\'!A0\nnext';
    const csv = focusCsv(
      l.lines(
        new Map([
          [ORG_A, hostile],
          [ORG_B, '@SUM(1+1)'],
        ]),
      ),
    );
    const rows = parseCsv(csv);
    expect(rows[0]).toEqual([...CSV_COLUMNS]);
    for (const r of rows) expect(r).toHaveLength(CSV_COLUMNS.length);
    const names = new Set(csvRecords(csv).map((r) => r.BillingAccountName));
    expect(names).toEqual(new Set([hostile, "'@SUM(1+1)"]));
    // A model name with a comma and quotes survives in its description and SKU.
    expect(csvRecords(csv).some((r) => r.SkuId?.startsWith('llm/platform/gpt,"quoted"/'))).toBe(true);
    expect(csv.endsWith('\r\n')).toBe(true);
  });

  it('writes a header alone for an empty period, and the same bytes for the same records in any order', () => {
    expect(focusCsv(new FocusLedger().lines(new Map()))).toBe(`${CSV_COLUMNS.join(',')}\r\n`);
    const records = ledger(200, 9);
    const a = new FocusLedger();
    a.add(records);
    const b = new FocusLedger();
    b.add([...records].reverse());
    expect(focusCsv(b.lines(new Map()))).toBe(focusCsv(a.lines(new Map())));
  });
});
