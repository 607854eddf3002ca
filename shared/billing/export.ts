import type { AccountStore } from '#shared/accounts/account-store.ts';
import { DEFAULT_PARTIES, FocusLedger, focusCsv, microUsdDecimal, nextDay } from '#shared/billing/focus.ts';
import type { UsageStore } from '#shared/usage/usage-store.ts';

/** Where the FOCUS files go in the operator's bucket (and under DATA_DIR/billing-exports/ locally). */
export const BILLING_EXPORT_PREFIX = 'focus-1.2/';
/** The longest period one run writes (on demand; the schedule writes one day). */
export const MAX_EXPORT_DAYS = 31;

/** The object key of a period's file: the same period is the same key, so a re-run replaces it. */
export const exportKey = (from: string, to: string) => `${BILLING_EXPORT_PREFIX}${from}_${to}.csv`;

/** Where export files are written: the operator's S3 bucket on AWS, a folder locally. */
export interface BillingExportSink {
  /** Writes (replaces) `key` with `body`; answers where it went (`s3://bucket/key`, or a file path). */
  put(key: string, body: string): Promise<string>;
}

export interface ExportResult {
  from: string;
  to: string;
  key: string;
  location: string;
  lines: number;
  records: number;
  billed_cost_usd: string;
}

/** The UTC day before `now`'s: what the daily run exports. */
export function previousDay(now: Date): string {
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - 1));
  return d.toISOString().slice(0, 10);
}

/** The days from `from` to `to`, inclusive. */
export function daysOf(from: string, to: string): string[] {
  const out: string[] = [];
  for (let d = from; d <= to; d = nextDay(d)) out.push(d);
  return out;
}

/**
 * Writes the ledger of a period (UTC days `from`..`to`, inclusive) as one FOCUS 1.2 CSV file: every
 * organization's records of each day (index `byDay`, a page at a time), folded into lines as they come,
 * so memory holds lines, not records. Organizations' names are read once each.
 */
export class BillingExports {
  constructor(
    private readonly usage: UsageStore,
    private readonly accounts: AccountStore,
    private readonly sink: BillingExportSink,
  ) {}

  async run(from: string, to: string): Promise<ExportResult> {
    const ledger = new FocusLedger();
    for (const day of daysOf(from, to)) for await (const page of this.usage.dayRecords(day)) ledger.add(page);
    const names = new Map<string, string | null>();
    for (const orgId of ledger.orgIds()) names.set(orgId, (await this.accounts.getOrg(orgId))?.name ?? null);
    const lines = ledger.lines(names, DEFAULT_PARTIES);
    const key = exportKey(from, to);
    const location = await this.sink.put(key, focusCsv(lines));
    return {
      from,
      to,
      key,
      location,
      lines: lines.length,
      records: ledger.records,
      billed_cost_usd: microUsdDecimal(ledger.recordsMicroUsd),
    };
  }
}
