import type { Prices } from '#shared/usage/prices.ts';
import { DAY_MS, iso, StorageMeter } from '#shared/usage/storage.ts';
import type { StorageHolding, UsageStore } from '#shared/usage/usage-store.ts';

/** The storage meter with the daily close (the daily billing run's only: no other bundle carries it). */
export class DailyStorageMeter extends StorageMeter {
  constructor(
    usage: UsageStore,
    prices: Prices,
    /** Every holding, a page at a time (`dynamoStorageHoldings`). */
    private readonly holdings: () => AsyncIterable<StorageHolding[]>,
    now: () => Date = () => new Date(),
  ) {
    super(usage, prices, now);
  }

  /**
   * The daily close: every holding open since before today's UTC midnight is recorded up to it and
   * moved to it, so each day's storage is in its records by the time the day's export runs. Idempotent
   * (the records' keys; the move is conditional). Returns how many holdings were closed.
   */
  async closeDay(): Promise<number> {
    const midnight = Math.floor(this.now().getTime() / DAY_MS) * DAY_MS;
    let closed = 0;
    for await (const page of this.holdings())
      for (const h of page) {
        if (Date.parse(h.since) >= midnight) continue;
        await this.close(h, midnight);
        // Lost to a snapshot or a delete meanwhile: that writer closed the same records (same keys).
        if (await this.usage.moveHolding(h.sandboxId, h, { ...h, since: iso(midnight) })) closed++;
      }
    return closed;
  }
}
