/**
 * How long the ledger's records are kept (docs/billing.md, "Retention"): `USAGE_RETENTION_DAYS` (the CDK
 * context `usageRetentionDays`), 400 days by default: a year of invoices can be made again from their
 * records, with a month's margin. Totals carry no expiry: they are kept as long as the table.
 */
export const DEFAULT_USAGE_RETENTION_DAYS = 400;

/** The retention in days from the environment, checked (a whole number of days, 1 to 3650), naming the key. */
export function usageRetentionDays(env: Record<string, string | undefined> = process.env): number {
  const raw = env.USAGE_RETENTION_DAYS?.trim();
  if (!raw) return DEFAULT_USAGE_RETENTION_DAYS;
  const days = Number(raw);
  if (!Number.isInteger(days) || days < 1 || days > 3650)
    throw new Error(
      `Configuration error: USAGE_RETENTION_DAYS must be a whole number of days from 1 to 3650, not "${raw}"`,
    );
  return days;
}

/** A record's expiry (epoch seconds, the table's TTL attribute `expiresAtEpoch`): its UTC day plus the retention. */
export const recordExpiry = (day: string, days: number) => Math.floor(Date.parse(day) / 1000) + days * 86_400;
