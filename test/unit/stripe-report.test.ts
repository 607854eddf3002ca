import { describe, expect, it } from 'vitest';
import {
  meterIdentifier,
  StripeMeterClient,
  StripeReporter,
  StripeReportRefused,
  type StripeStore,
  takenSubset,
} from '#shared/billing/stripe.ts';
import type { UsageStore } from '#shared/usage/usage-store.ts';

const noUsage = { dayRecords: async function* () {} } as unknown as UsageStore;
const noStore = {} as StripeStore;

describe('the Stripe reporter', () => {
  it('refuses without Stripe configured (the route answers 409), and periods older than 35 days (422 on from)', async () => {
    const none = new StripeReporter(noUsage, noStore, null);
    await expect(none.report('2026-01-01', '2026-01-01')).rejects.toMatchObject({ field: null });
    const client = new StripeMeterClient({ apiBase: 'http://x', meterEventsBase: 'http://x', apiKey: async () => 'k' });
    const now = () => new Date('2026-03-01T12:00:00Z');
    const r = new StripeReporter(noUsage, noStore, client, now);
    const refused = await r.report('2026-01-24', '2026-01-25').catch((e) => e);
    expect(refused).toBeInstanceOf(StripeReportRefused);
    expect(refused.field).toBe('from');
  });

  it('names an aggregate by a hash of (organization, meter, hour): stable, distinct, within Stripe limits', () => {
    const a = meterIdentifier('org_a', 'acs_compute_micro_usd', '2026-01-01T03:00:00Z');
    expect(a).toBe(meterIdentifier('org_a', 'acs_compute_micro_usd', '2026-01-01T03:00:00Z'));
    expect(a).not.toBe(meterIdentifier('org_a', 'acs_llm_micro_usd', '2026-01-01T03:00:00Z'));
    expect(a).not.toBe(meterIdentifier('org_b', 'acs_compute_micro_usd', '2026-01-01T03:00:00Z'));
    expect(a).not.toBe(meterIdentifier('org_a', 'acs_compute_micro_usd', '2026-01-01T04:00:00Z'));
    expect(a).toMatch(/^acs_[0-9a-f]{48}$/);
  });

  it("decides which claimed corrections Stripe took only when one set of them fits Stripe's sum", () => {
    expect(takenSubset([90n], 600n, 690n)).toEqual([0]);
    expect(takenSubset([90n], 600n, 600n)).toEqual([]);
    expect(takenSubset([90n, 30n, 7n], 600n, 637n)).toEqual([1, 2]);
    // Two sets fit (equal claims, one taken): undecided. None fits (another customer's sum): undecided.
    expect(takenSubset([30n, 30n], 600n, 630n)).toBeUndefined();
    expect(takenSubset([90n], 600n, 0n)).toBeUndefined();
    expect(takenSubset(Array(13).fill(1n), 0n, 0n)).toBeUndefined();
  });
});
