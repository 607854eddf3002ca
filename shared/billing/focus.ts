import { roundHalfEven } from '#shared/usage/prices.ts';
import type { UsageRecord } from '#shared/usage/usage-store.ts';

/*
 * The ledger as FOCUS 1.2 (FinOps Open Cost and Usage Specification) lines, and those lines as CSV.
 * One line per (organization, user, UTC day, SKU, region): compute as two SKUs (vCPU and memory, on-demand
 * or Spot) and a third for an AWS task's public IPv4, storage as one, each platform model's tokens as up to
 * four (input, output, cached input, cache-write input).
 * Money stays integer micro-USD until it is written as an exact decimal string; no float touches it.
 * docs/billing.md ("The FOCUS export") says what each column holds.
 */

/** The FOCUS columns we emit, in the specification's (alphabetical) order; then ours, prefixed `x_`. */
export const FOCUS_COLUMNS = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingAccountType',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'PricingCategory',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'RegionId',
  'ServiceCategory',
  'ServiceName',
  'ServiceSubcategory',
  'SkuId',
  'SubAccountId',
  'SubAccountType',
] as const;
export const CUSTOM_COLUMNS = ['x_RecordCount', 'x_EstimatedRecordCount'] as const;
export const CSV_COLUMNS = [...FOCUS_COLUMNS, ...CUSTOM_COLUMNS] as const;
export type CsvColumn = (typeof CSV_COLUMNS)[number];
/** A line: each column's value as written (a string), or null (an empty field). */
export type FocusLine = Record<CsvColumn, string | null>;

/** Who provides, publishes and invoices: the operator of this deployment (docs/billing.md). */
export interface FocusParties {
  providerName: string;
  publisherName: string;
  invoiceIssuerName: string;
}
export const DEFAULT_PARTIES: FocusParties = {
  providerName: 'Agent Conversation Service',
  publisherName: 'Agent Conversation Service',
  invoiceIssuerName: 'Agent Conversation Service',
};

/** Integer micro-USD as an exact decimal with six places: 1234567 -> "1.234567", -5 -> "-0.000005". */
export function microUsdDecimal(micro: number | bigint): string {
  const m = BigInt(micro);
  const sign = m < 0n ? '-' : '';
  const a = m < 0n ? -m : m;
  return `${sign}${a / 1_000_000n}.${String(a % 1_000_000n).padStart(6, '0')}`;
}

/** A decimal string (or a JSON number) as an exact fraction n / d. */
function fraction(value: string | number): { n: bigint; d: bigint } {
  const text = typeof value === 'number' ? value.toFixed(12).replace(/0+$/, '') : value;
  const [whole, frac = ''] = text.split('.');
  return { n: BigInt(whole! + frac), d: 10n ** BigInt(frac.length) };
}

/**
 * Splits a record's rounded cost (`total`, micro-USD) over its parts (exact fractions n/d), each part
 * rounded half-even and what rounding left over put on the largest part: the parts always sum to the
 * record's own cost, so a line's cost is a sum of what the ledger charged, to the micro-USD.
 */
export function allocate(total: number, parts: { n: bigint; d: bigint }[]): number[] {
  const rounded = parts.map((p) => Number(roundHalfEven(p.n, p.d)));
  const left = total - rounded.reduce((a, b) => a + b, 0);
  if (left !== 0 && rounded.length) {
    let largest = 0;
    for (let i = 1; i < parts.length; i++)
      if (parts[i]!.n * parts[largest]!.d > parts[largest]!.n * parts[i]!.d) largest = i;
    rounded[largest]! += left;
  }
  return rounded;
}

interface Charge {
  sku: string | null;
  region: string | null;
  service: 'compute' | 'llm' | 'storage' | 'correction';
  description: string;
  unit: string;
  quantity: number;
  microUsd: number;
  estimated: boolean;
  /** A correction's id: its own line. */
  line?: string;
  /** A correction's time of writing (ChargeClass). */
  writtenAt?: string;
}

/** A compute record's charges: vCPU and memory, its cost split exactly as the price it was charged at says. */
function computeCharges(r: Extract<UsageRecord, { kind: 'compute' }>): Charge[] {
  const s = BigInt(r.seconds);
  const v = fraction(r.price.vcpu_hour_usd);
  const g = fraction(r.price.gb_hour_usd);
  const m = fraction(r.price.markup_percent);
  // As computeCharge: seconds/3600 x units/1024 x price x (1 + markup/100), in micro-USD.
  const part = (units: number, p: { n: bigint; d: bigint }) => ({
    n: s * BigInt(units) * p.n * (100n * m.d + m.n) * 1_000_000n,
    d: 3600n * 1024n * p.d * 100n * m.d,
  });
  // The task's public IPv4 address, priced in with the compute (an AWS task's records only): seconds x price.
  const ipv4 = r.price.ipv4_hour_usd !== undefined ? fraction(r.price.ipv4_hour_usd) : undefined;
  const parts = [part(r.cpuUnits, v), part(r.memoryMiB, g)];
  if (ipv4) parts.push(part(1024, ipv4));
  const [cpu, mem, ip] = allocate(r.computeMicroUsd, parts);
  const capacity = r.price.spot ? 'spot' : 'on-demand';
  const region = r.price.region;
  const address: Charge[] = ipv4
    ? [
        {
          sku: 'compute/public-ipv4',
          region,
          service: 'compute',
          description: "Sandbox compute: the task's public IPv4 address, per address-second",
          unit: 'IPv4-Seconds',
          quantity: r.seconds,
          microUsd: ip!,
          estimated: false,
        },
      ]
    : [];
  return [
    ...address,
    {
      sku: `compute/vcpu/${capacity}`,
      region,
      service: 'compute',
      description: `Sandbox compute: vCPU, ${capacity === 'spot' ? 'Spot' : 'on-demand'}, per vCPU-second`,
      unit: 'vCPU-Seconds',
      quantity: r.vcpuSeconds,
      microUsd: cpu!,
      estimated: false,
    },
    {
      sku: `compute/memory/${capacity}`,
      region,
      service: 'compute',
      description: `Sandbox compute: memory, ${capacity === 'spot' ? 'Spot' : 'on-demand'}, per GB-second`,
      unit: 'GB-Seconds',
      quantity: r.gbSeconds,
      microUsd: mem!,
      estimated: false,
    },
  ];
}

const TOKEN_KINDS = [
  { key: 'input', sku: 'input', words: 'input tokens' },
  { key: 'output', sku: 'output', words: 'output tokens' },
  { key: 'cachedInput', sku: 'cached-input', words: 'cached input tokens' },
  { key: 'cacheWriteInput', sku: 'cache-write-input', words: 'cache-write input tokens' },
] as const;

/** A platform-LLM record's charges: one per kind of token it has, its cost split by the prices it was charged at. */
function llmCharges(r: Extract<UsageRecord, { kind: 'llm' }>): Charge[] {
  const p = r.price;
  const perToken = {
    input: p.input,
    output: p.output,
    cachedInput: p.cached_input ?? p.input,
    cacheWriteInput: p.cache_write_input ?? p.input,
  };
  const m = fraction(p.markup);
  // As llmCharge: a USD price per million tokens is a micro-USD price per token, times (1 + markup).
  const parts = TOKEN_KINDS.map(({ key }) => {
    const f = fraction(perToken[key]);
    return { n: BigInt(r[key] ?? 0) * f.n * (m.d + m.n), d: f.d * m.d };
  });
  const costs = allocate(r.costMicroUsd, parts);
  return TOKEN_KINDS.flatMap(({ key, sku, words }, i) =>
    (r[key] ?? 0) === 0 && costs[i] === 0
      ? []
      : [
          {
            sku: `llm/${r.model}/${sku}`,
            region: null,
            service: 'llm' as const,
            description: `Platform LLM ${r.model}: ${words}`,
            unit: 'Tokens',
            quantity: r[key] ?? 0,
            microUsd: costs[i]!,
            estimated: r.estimated,
          },
        ],
  );
}

/** A storage record's one charge: the snapshot bytes held, in MiB-seconds, at the price it was charged at. */
function storageCharges(r: Extract<UsageRecord, { kind: 'storage' }>): Charge[] {
  return [
    {
      sku: 'storage/workspace-snapshots',
      region: r.price.region,
      service: 'storage',
      description: 'Workspace snapshots held, per MiB-second',
      unit: 'MiB-Seconds',
      quantity: r.mibSeconds,
      microUsd: r.storageMicroUsd,
      estimated: false,
    },
  ];
}

/**
 * An operator's correction: a line of its own (FOCUS ChargeCategory "Adjustment": a money amount the provider
 * applies, no quantity consumed), named by its reason; `writtenAt` decides ChargeClass (below).
 */
function correctionCharges(r: Extract<UsageRecord, { kind: 'correction' }>): Charge[] {
  return [
    {
      sku: null,
      region: null,
      service: 'correction',
      description: `Correction: ${r.reason}`,
      unit: '',
      quantity: 0,
      microUsd: r.microUsd,
      estimated: false,
      line: r.id,
      writtenAt: r.at,
    },
  ];
}

/** A record's charges, whatever its kind. */
function chargesOf(r: UsageRecord): Charge[] {
  if (r.kind === 'compute') return computeCharges(r);
  if (r.kind === 'llm') return llmCharges(r);
  if (r.kind === 'storage') return storageCharges(r);
  return correctionCharges(r);
}

/** A record's cost in micro-USD, whatever its kind. */
export function recordMicroUsd(r: UsageRecord): number {
  if (r.kind === 'compute') return r.computeMicroUsd;
  if (r.kind === 'llm') return r.costMicroUsd;
  if (r.kind === 'storage') return r.storageMicroUsd;
  return r.microUsd;
}

const SERVICES = {
  compute: { name: 'Sandbox compute', category: 'Compute', subcategory: 'Containers' },
  storage: { name: 'Workspace storage', category: 'Storage', subcategory: 'Object Storage' },
  llm: { name: 'Platform LLM', category: 'AI and Machine Learning', subcategory: 'Generative AI' },
  correction: { name: 'Billing corrections', category: 'Other', subcategory: 'Other (Other)' },
} as const;

const iso = (day: string) => `${day}T00:00:00Z`;
/** The UTC day after `day` (`YYYY-MM-DD`). */
export function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}
/** The calendar month (UTC) of `day`: its first day and the first day of the next month. */
function monthOf(day: string): [string, string] {
  const d = new Date(`${day.slice(0, 7)}-01T00:00:00Z`);
  const start = d.toISOString().slice(0, 10);
  d.setUTCMonth(d.getUTCMonth() + 1);
  return [start, d.toISOString().slice(0, 10)];
}

interface Group {
  orgId: string;
  userId: string | null;
  day: string;
  charge: Charge;
  quantity: number;
  microUsd: number;
  records: number;
  estimated: number;
}

/** Adds records to lines, a page at a time; `lines()` gives them in (organization, day, user, SKU) order. */
export class FocusLedger {
  private readonly groups = new Map<string, Group>();
  /** Micro-USD of every record added (what the lines' BilledCost must sum to). */
  recordsMicroUsd = 0;
  records = 0;

  add(records: Iterable<UsageRecord>): void {
    for (const r of records) {
      const charges = chargesOf(r);
      this.records++;
      this.recordsMicroUsd += recordMicroUsd(r);
      for (const c of charges) {
        // A correction is a line of its own (its id); other charges add up per (user, SKU, region).
        const key = JSON.stringify([r.orgId, r.day, r.userId ?? '', c.line ?? c.sku, c.region]);
        let g = this.groups.get(key);
        if (!g) {
          g = {
            orgId: r.orgId,
            userId: r.userId,
            day: r.day,
            charge: c,
            quantity: 0,
            microUsd: 0,
            records: 0,
            estimated: 0,
          };
          this.groups.set(key, g);
        }
        g.quantity += c.quantity;
        g.microUsd += c.microUsd;
        g.records++;
        if (c.estimated) g.estimated++;
      }
    }
  }

  /** The organizations with lines (for their names). */
  orgIds(): string[] {
    return [...new Set([...this.groups.values()].map((g) => g.orgId))].sort();
  }

  lines(orgNames: ReadonlyMap<string, string | null>, parties: FocusParties = DEFAULT_PARTIES): FocusLine[] {
    const sorted = [...this.groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, g]) => g);
    return sorted.map((g) => {
      const service = SERVICES[g.charge.service];
      const cost = microUsdDecimal(g.microUsd);
      const correction = g.charge.service === 'correction';
      // FOCUS: ChargeClass "Correction" for a correction to a previously invoiced billing period (written
      // once the month of the day it applies to had ended: it is invoiced in the month it was written);
      // null for one within the current billing period.
      const [dayMonthStart, dayMonthEnd] = monthOf(g.day);
      const late = correction && Date.parse(g.charge.writtenAt!) >= Date.parse(iso(dayMonthEnd));
      const [monthStart, monthEnd] = late ? monthOf(g.charge.writtenAt!.slice(0, 10)) : [dayMonthStart, dayMonthEnd];
      return {
        BilledCost: cost,
        BillingAccountId: g.orgId,
        BillingAccountName: orgNames.get(g.orgId) ?? null,
        BillingAccountType: 'Organization',
        BillingCurrency: 'USD',
        BillingPeriodEnd: iso(monthEnd),
        BillingPeriodStart: iso(monthStart),
        ChargeCategory: correction ? 'Adjustment' : 'Usage',
        ChargeClass: late ? 'Correction' : null,
        ChargeDescription: g.charge.description,
        ChargeFrequency: correction ? 'One-Time' : 'Usage-Based',
        ChargePeriodEnd: iso(nextDay(g.day)),
        ChargePeriodStart: iso(g.day),
        // A correction is money, not a quantity consumed: no quantities, units, SKU or pricing category.
        ConsumedQuantity: correction ? null : String(g.quantity),
        ConsumedUnit: correction ? null : g.charge.unit,
        // No negotiated prices or discounts: what is billed is the list price.
        ContractedCost: cost,
        EffectiveCost: cost,
        InvoiceIssuerName: parties.invoiceIssuerName,
        ListCost: cost,
        PricingCategory: correction ? null : 'Standard',
        PricingQuantity: correction ? null : String(g.quantity),
        PricingUnit: correction ? null : g.charge.unit,
        ProviderName: parties.providerName,
        PublisherName: parties.publisherName,
        RegionId: g.charge.region,
        ServiceCategory: service.category,
        ServiceName: service.name,
        ServiceSubcategory: service.subcategory,
        SkuId: g.charge.sku,
        SubAccountId: g.userId,
        SubAccountType: g.userId === null ? null : 'User',
        x_RecordCount: String(g.records),
        x_EstimatedRecordCount: String(g.estimated),
      };
    });
  }
}

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote, CR or LF (quotes doubled); null is an
 * empty field. Text that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) gets a
 * leading `'` in the free-text columns that people choose (an organization's name), so opening the file
 * runs nothing a customer typed.
 */
export function csvField(value: string | null, freeText = false): string {
  if (value === null) return '';
  const safe = freeText && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

const FREE_TEXT = new Set<CsvColumn>(['BillingAccountName']);

/** The header and the lines, CRLF-terminated (RFC 4180). */
export function focusCsv(lines: FocusLine[]): string {
  const rows = [CSV_COLUMNS.join(',')];
  for (const line of lines) rows.push(CSV_COLUMNS.map((c) => csvField(line[c], FREE_TEXT.has(c))).join(','));
  return `${rows.join('\r\n')}\r\n`;
}
