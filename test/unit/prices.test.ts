import { describe, expect, it } from 'vitest';
import {
  computeCharge,
  DEFAULT_PRICES_CONFIG,
  envPrices,
  parsePrices,
  roundHalfEven,
  storageCharge,
} from '#shared/usage/prices.ts';
import { filePrices } from '#shared/usage/prices.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { join } from 'node:path';

describe('prices', () => {
  it('rounds half to even', () => {
    expect([5n, 15n, 25n, 35n, 14n, 16n].map((n) => roundHalfEven(n, 10n))).toEqual([0n, 2n, 2n, 4n, 1n, 2n]);
  });

  it('charges exactly in micro-USD: the per-hour price over 3600 s, the markup, half-even per record', () => {
    const price = parsePrices(DEFAULT_PRICES_CONFIG, 't').compute('us-east-1', false);
    expect(computeCharge(3600, 1024, 2048, price)).toEqual({ vcpuSeconds: 3600, gbSeconds: 7200, costMicroUsd: 39500 });
    // 1 s of 0.25 vCPU, 0.5 GB: 0.25 x 0.03238/3600 + 0.5 x 0.00356/3600 = 2.743...e-6 USD -> 3 micro-USD.
    expect(computeCharge(1, 256, 512, price)).toEqual({ vcpuSeconds: 0, gbSeconds: 0, costMicroUsd: 3 });
    const marked = parsePrices({ ...DEFAULT_PRICES_CONFIG, markup_percent: '25' }, 't').compute(undefined, true);
    expect(marked).toMatchObject({ region: 'us-east-1', spot: true, vcpu_hour_usd: '0.009714' });
    // 3600 s x (0.009714 + 2 x 0.001068) x 1.25 = 0.0148125 USD: 14812.5 micro-USD, half to even 14812.
    expect(computeCharge(3600, 1024, 2048, marked).costMicroUsd).toBe(14812);
  });

  it("prices an AWS task's public IPv4 address in its compute, recorded on the price; none for a local process", () => {
    const prices = parsePrices(DEFAULT_PRICES_CONFIG, 't');
    const aws = prices.compute('us-east-1', false, true);
    expect(aws.ipv4_hour_usd).toBe('0.005');
    // An hour of 1 vCPU, 2 GB and one address: 0.0395 + 0.005 USD.
    expect(computeCharge(3600, 1024, 2048, aws)).toEqual({ vcpuSeconds: 3600, gbSeconds: 7200, costMicroUsd: 44500 });
    // One second: 10.97... + 1.388... micro-USD, rounded once: 12.
    expect(computeCharge(1, 1024, 2048, aws).costMicroUsd).toBe(12);
    expect(prices.compute('us-east-1', false)).not.toHaveProperty('ipv4_hour_usd');
    // A prices file without public_ipv4 records the address at 0; with markup it is marked up too.
    const bare = parsePrices({ default_region: 'us-east-1', compute: DEFAULT_PRICES_CONFIG.compute }, 't');
    expect(bare.compute('us-east-1', false, true).ipv4_hour_usd).toBe('0');
    const marked = parsePrices({ ...DEFAULT_PRICES_CONFIG, markup_percent: '10' }, 't').compute(
      'us-east-1',
      false,
      true,
    );
    expect(computeCharge(3600, 1024, 2048, marked).costMicroUsd).toBe(48950);
  });

  it('prices storage per GB-month of 730 hours, in integer MiB-seconds and micro-USD', () => {
    const price = parsePrices(DEFAULT_PRICES_CONFIG, 't').storage('eu-north-1');
    expect(price).toEqual({ region: 'us-east-1', gb_month_usd: '0.023', markup_percent: '0' });
    // 1 GiB for 730 hours: exactly the month's price.
    expect(storageCharge(2 ** 30, 730 * 3600, price)).toEqual({ mibSeconds: 1024 * 730 * 3600, costMicroUsd: 23_000 });
    // 10 MiB for 30 s: 300 MiB-s and 0.0026 micro-USD (0); 12.5 MiB for 25 s: 312.5 MiB-s, half-even 312.
    expect(storageCharge(10 * 2 ** 20, 30, price)).toEqual({ mibSeconds: 300, costMicroUsd: 0 });
    expect(storageCharge(2 ** 19 * 25, 25, price).mibSeconds).toBe(312);
    expect(
      parsePrices({ default_region: 'us-east-1', compute: DEFAULT_PRICES_CONFIG.compute }, 't').storage(undefined),
    ).toMatchObject({ gb_month_usd: '0' });
  });

  it('uses the default region for an unpriced one, on-demand where Spot is unpriced', () => {
    const prices = parsePrices(
      {
        default_region: 'eu-west-1',
        compute: { 'eu-west-1': { on_demand: { vcpu_hour_usd: '1', gb_hour_usd: '0' } } },
      },
      't',
    );
    expect(prices.compute('ap-south-1', true)).toMatchObject({ region: 'eu-west-1', spot: false, vcpu_hour_usd: '1' });
  });

  it('refuses a bad configuration naming the key; config/prices.json is the built-in default', () => {
    expect(() => parsePrices({ default_region: 'x', compute: {} }, 'PRICES')).toThrow(/PRICES at default_region/);
    expect(() => parsePrices({ ...DEFAULT_PRICES_CONFIG, markup_percent: 0.2 }, 'PRICES')).toThrow(
      /PRICES at markup_percent/,
    );
    expect(() => envPrices('{')).toThrow(/PRICES is not JSON/);
    const file = filePrices(join(PROJECT_ROOT, 'config/prices.json')).compute(undefined, false);
    expect(file).toEqual(envPrices('').compute(undefined, false));
  });
});
