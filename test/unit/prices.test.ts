import { describe, expect, it } from 'vitest';
import { computeCharge, DEFAULT_PRICES_CONFIG, envPrices, parsePrices, roundHalfEven } from '#shared/usage/prices.ts';
import { filePrices } from '#shared/usage/prices.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { join } from 'node:path';

describe('prices', () => {
  it('rounds half to even', () => {
    expect([5n, 15n, 25n, 35n, 14n, 16n].map((n) => roundHalfEven(n, 10n))).toEqual([0n, 2n, 2n, 4n, 1n, 2n]);
  });

  it('charges exactly in micro-USD: the per-hour price over 3600 s, the markup, half-even per record', () => {
    const price = parsePrices(DEFAULT_PRICES_CONFIG, 't').compute('us-east-1', false);
    expect(computeCharge(3600, 1024, 2048, price)).toEqual({ vcpuSeconds: 3600, gbSeconds: 7200, costMicroUsd: 49370 });
    // 1 s of 0.25 vCPU, 0.5 GB: 0.25 x 0.04048/3600 + 0.5 x 0.004445/3600 = 3.428...e-6 USD -> 3 micro-USD.
    expect(computeCharge(1, 256, 512, price)).toEqual({ vcpuSeconds: 0, gbSeconds: 0, costMicroUsd: 3 });
    const marked = parsePrices({ ...DEFAULT_PRICES_CONFIG, markup_percent: '25' }, 't').compute(undefined, true);
    expect(marked).toMatchObject({ region: 'us-east-1', spot: true, vcpu_hour_usd: '0.01244' });
    // 3600 s x (0.01244 + 2 x 0.00137) x 1.25 = 0.018975 USD.
    expect(computeCharge(3600, 1024, 2048, marked).costMicroUsd).toBe(18975);
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
