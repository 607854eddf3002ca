import { readFileSync } from 'node:fs';
import * as z from '#shared/zod.ts';

/*
 * Compute prices (config/prices.json locally, `PRICES_FILE` to replace it; the CDK context `prices`
 * on AWS, env PRICES). Prices are decimal strings in USD per vCPU-hour and per GB-hour, as AWS
 * publishes Fargate's (per second they are repeating decimals: 0.03238 / 3600); a markup in percent.
 * The defaults are Fargate's Linux/ARM64 prices (the sandbox tasks run on Graviton: infra/constructs/sandboxes.ts).
 * Arithmetic is exact (BigInt rationals) and each record is rounded half-even to a micro-USD.
 */

const decimal = z.string().check(z.regex(/^\d{1,6}(\.\d{1,12})?$/, 'a decimal number as a string, e.g. "0.03238"'));
const rate = z.strictObject({ vcpu_hour_usd: decimal, gb_hour_usd: decimal });
const region = z.string().check(z.minLength(1));
export const pricesSchema = z
  .strictObject({
    default_region: region,
    compute: z.record(region, z.strictObject({ on_demand: rate, spot: z.optional(rate) })),
    /** A Fargate task's public IPv4 address, per hour (AWS: 0.005); priced in each compute record of an AWS task. */
    public_ipv4: z.optional(z.record(region, z.strictObject({ hour_usd: decimal }))),
    /** Workspace snapshots held in S3 (Standard), per GB-month (AWS us-east-1: 0.023); a GB-month is 730 GB-hours. */
    storage: z.optional(z.record(region, z.strictObject({ gb_month_usd: decimal }))),
    markup_percent: z._default(decimal, '0'),
  })
  .check(
    z.refine((p) => p.default_region in p.compute, {
      message: 'must name one of the regions in compute',
      path: ['default_region'],
    }),
  );
export type PricesConfig = z.output<typeof pricesSchema>;

/** The price a record was charged at, stored on the record itself (a later price change never rewrites it). */
export interface ComputePrice {
  region: string;
  spot: boolean;
  vcpu_hour_usd: string;
  gb_hour_usd: string;
  markup_percent: string;
  /**
   * The task's public IPv4 address per hour, priced in with the compute (docs/billing.md, "Public IPv4"):
   * present only on a record of a task that has one (an AWS Fargate task); absent locally (no address: zero).
   */
  ipv4_hour_usd?: string;
}

/** The price a storage record was charged at (per GB-month of 730 hours; GB = 1024^3 bytes), stored on the record. */
export interface StoragePrice {
  region: string;
  gb_month_usd: string;
  markup_percent: string;
}

/** Hours in the GB-month a storage price is given per (AWS's average month, 8,760 / 12). */
export const HOURS_PER_MONTH = 730;

export interface Prices {
  /**
   * The compute price for `region` (the default region's where it has none), Spot or on-demand (Spot falls
   * back to on-demand where unpriced); with `publicIpv4`, the region's IPv4 hourly price recorded beside it.
   */
  compute(region: string | undefined, spot: boolean, publicIpv4?: boolean): ComputePrice;
  /** The snapshot storage price for `region` (the default region's where it has none; "0" when none is configured). */
  storage(region: string | undefined): StoragePrice;
}

export function parsePrices(raw: unknown, source: string): Prices {
  const parsed = pricesSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`Configuration error: ${source} at ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  const p = parsed.data;
  // A region's entry in an optional table, else the default region's, else none.
  const inRegion = <T>(table: Record<string, T> | undefined, at: string) => table?.[at] ?? table?.[p.default_region];
  return {
    compute: (region, spot, publicIpv4 = false) => {
      const at = region && region in p.compute ? region : p.default_region;
      const r = p.compute[at]!;
      const rates = spot && r.spot ? r.spot : r.on_demand;
      const ipv4 = publicIpv4 ? (inRegion(p.public_ipv4, at)?.hour_usd ?? '0') : undefined;
      return {
        region: at,
        spot: spot && !!r.spot,
        ...rates,
        markup_percent: p.markup_percent,
        ...(ipv4 !== undefined ? { ipv4_hour_usd: ipv4 } : {}),
      };
    },
    storage: (region) => {
      const at = region && region in p.compute ? region : p.default_region;
      return {
        region: at,
        gb_month_usd: inRegion(p.storage, at)?.gb_month_usd ?? '0',
        markup_percent: p.markup_percent,
      };
    },
  };
}

/** Local prices: the JSON file `path` (`PRICES_FILE`, default `config/prices.json`), checked when read. */
export function filePrices(path: string): Prices {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`Configuration error: PRICES_FILE: cannot read prices from ${path}: ${(err as Error).message}`);
  }
  return parsePrices(raw, `PRICES_FILE ${path}`);
}

/**
 * The built-in prices (config/prices.json's), used where none are configured (AWS without the context key):
 * Fargate Linux/ARM64 in us-east-1; Spot is an example at 30% of on-demand (Spot prices move).
 */
export const DEFAULT_PRICES_CONFIG = {
  default_region: 'us-east-1',
  compute: {
    'us-east-1': {
      on_demand: { vcpu_hour_usd: '0.03238', gb_hour_usd: '0.00356' },
      spot: { vcpu_hour_usd: '0.009714', gb_hour_usd: '0.001068' },
    },
  },
  public_ipv4: { 'us-east-1': { hour_usd: '0.005' } },
  storage: { 'us-east-1': { gb_month_usd: '0.023' } },
  markup_percent: '0',
};

/** AWS prices: the JSON the CDK app writes into `PRICES` from the context key `prices` (empty: the built-in defaults). */
export function envPrices(value: string | undefined): Prices {
  if (!value) return parsePrices(DEFAULT_PRICES_CONFIG, 'the built-in prices');
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch (err) {
    throw new Error(`Configuration error: PRICES is not JSON: ${(err as Error).message}`);
  }
  return parsePrices(raw, 'PRICES');
}

/** A decimal string as an exact fraction n / 10^scale. */
function fraction(value: string): { n: bigint; d: bigint } {
  const [whole, frac = ''] = value.split('.');
  return { n: BigInt(whole! + frac), d: 10n ** BigInt(frac.length) };
}

/** n / d rounded half to even (n, d >= 0). */
export function roundHalfEven(n: bigint, d: bigint): bigint {
  const q = n / d;
  const r = n - q * d;
  if (r * 2n < d) return q;
  if (r * 2n > d) return q + 1n;
  return q % 2n === 0n ? q : q + 1n;
}

/**
 * What `seconds` of `cpuUnits` (1024 = 1 vCPU) and `memoryMiB` cost at `price`, in integer micro-USD,
 * and the integer quantities (vCPU-seconds, GB-seconds; GB = 1024 MiB, as Fargate bills), each rounded half-even.
 * A price with `ipv4_hour_usd` adds the task's public IPv4 address for the same seconds, in the same rounding.
 */
export function computeCharge(
  seconds: number,
  cpuUnits: number,
  memoryMiB: number,
  price: ComputePrice,
): { vcpuSeconds: number; gbSeconds: number; costMicroUsd: number } {
  const s = BigInt(seconds);
  const cpu = BigInt(cpuUnits);
  const mem = BigInt(memoryMiB);
  const v = fraction(price.vcpu_hour_usd);
  const g = fraction(price.gb_hour_usd);
  const m = fraction(price.markup_percent);
  const i = fraction(price.ipv4_hour_usd ?? '0');
  // cost = s/3600 * (cpu/1024 * v + mem/1024 * g + ipv4) * (1 + m/100) * 10^6, over one common denominator.
  const perHour = (cpu * v.n * g.d + mem * g.n * v.d) * i.d + 1024n * i.n * v.d * g.d; // over 1024 * v.d * g.d * i.d
  const num = s * perHour * (100n * m.d + m.n) * 1_000_000n;
  const den = 3600n * 1024n * v.d * g.d * i.d * 100n * m.d;
  return {
    vcpuSeconds: Number(roundHalfEven(s * cpu, 1024n)),
    gbSeconds: Number(roundHalfEven(s * mem, 1024n)),
    costMicroUsd: Number(roundHalfEven(num, den)),
  };
}

/** 2^20: bytes in a MiB (storage quantities are MiB-seconds). */
const MIB = 1_048_576n;

/**
 * What `bytes` held for `seconds` cost at `price` (per GB-month of 730 hours, GB = 1024^3 bytes), in
 * integer micro-USD, and the integer quantity in MiB-seconds (docs/billing.md, "Workspace storage"), each
 * rounded half-even.
 */
export function storageCharge(
  bytes: number,
  seconds: number,
  price: StoragePrice,
): { mibSeconds: number; costMicroUsd: number } {
  const byteSeconds = BigInt(bytes) * BigInt(seconds);
  const p = fraction(price.gb_month_usd);
  const m = fraction(price.markup_percent);
  // cost = byteSeconds / (1024^3 * 730 * 3600) * p * (1 + m/100) * 10^6.
  const num = byteSeconds * p.n * (100n * m.d + m.n) * 1_000_000n;
  const den = MIB * 1024n * BigInt(HOURS_PER_MONTH) * 3600n * p.d * 100n * m.d;
  return { mibSeconds: Number(roundHalfEven(byteSeconds, MIB)), costMicroUsd: Number(roundHalfEven(num, den)) };
}
