import { logger } from '#shared/logging.ts';
import { type Prices, storageCharge } from '#shared/usage/prices.ts';
import type { StorageHolding, UsageStore } from '#shared/usage/usage-store.ts';

export const DAY_MS = 86_400_000;
/** Whole seconds: every holding and record boundary is one, so day ends (whole seconds too) split them exactly. */
const wholeSecond = (t: number) => Math.floor(t / 1000) * 1000;
export const iso = (t: number) => new Date(t).toISOString();

/** Who a holding belongs to: the sandbox and the organization and user billed for it. */
export interface StorageOwner {
  id: string;
  orgId?: string;
  userId: string;
}

/**
 * Workspace storage as GB-hours (docs/billing.md, "Workspace storage"): a sandbox's holding (the bytes
 * of its current snapshot, since when) is closed into records when the bytes change (a newer snapshot,
 * the delete) and at each UTC day's end (the daily close), so no heartbeat writes anything for it.
 * Records are keyed by (sandbox, interval start): a repeated or racing close writes once.
 */
export class StorageMeter {
  constructor(
    protected readonly usage: UsageStore,
    private readonly prices: Prices,
    protected readonly now: () => Date = () => new Date(),
  ) {}

  /** Records the holding's bytes from its `since` to `end` (whole seconds), one record per UTC day. */
  protected async close(h: StorageHolding, end: number): Promise<void> {
    let from = Date.parse(h.since);
    const price = this.prices.storage(process.env.AWS_REGION);
    while (from < end) {
      const to = Math.min(end, Math.floor(from / DAY_MS) * DAY_MS + DAY_MS);
      const seconds = (to - from) / 1000;
      const charge = storageCharge(h.bytes, seconds, price);
      await this.usage.recordStorage({
        sandboxId: h.sandboxId,
        orgId: h.orgId,
        userId: h.userId,
        day: iso(from).slice(0, 10),
        from: iso(from),
        to: iso(to),
        seconds,
        bytes: h.bytes,
        mibSeconds: charge.mibSeconds,
        storageMicroUsd: charge.costMicroUsd,
        price,
        // When it was written: the reconcile's settled time counts from here.
        recordedAt: this.now().toISOString(),
      });
      from = to;
    }
  }

  /**
   * The sandbox now holds `bytes` (its snapshot `key`; 0: none, it was deleted): the holding so far is
   * closed into records and replaced. A report of a snapshot older than the holding's changes nothing.
   * One read when nothing changed; else the records (a put and two totals each) and the holding's write.
   */
  async hold(owner: StorageOwner, bytes: number, key: string | null): Promise<void> {
    if (!owner.orgId) return; // a record from before organizations: nothing bills it (as its compute)
    for (let attempt = 0; attempt < 5; attempt++) {
      const held = await this.usage.storageHolding(owner.id);
      if (key !== null && held && (held.key >= key || held.bytes === bytes)) return;
      if (!held && bytes === 0) return;
      const end = Math.max(wholeSecond(this.now().getTime()), held ? Date.parse(held.since) : 0);
      if (held) await this.close(held, end);
      const next: StorageHolding | null =
        bytes > 0 && key !== null
          ? { sandboxId: owner.id, orgId: owner.orgId, userId: owner.userId, bytes, since: iso(end), key }
          : null;
      if (await this.usage.moveHolding(owner.id, held, next)) return;
    }
    logger.warn('usage.storage-raced', { sandboxId: owner.id });
  }
}
