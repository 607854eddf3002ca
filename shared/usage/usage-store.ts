import type { LlmRecord } from '#shared/llm/ledger.ts';
import type { ComputePrice } from '#shared/usage/prices.ts';

/** The quantities every record and total carries (integers: seconds, vCPU-seconds, GB-seconds, micro-USD). */
export interface UsageAmounts {
  seconds: number;
  /** Wall seconds x resource factor: what `sandbox_hours_per_month` counts. */
  factorSeconds: number;
  vcpuSeconds: number;
  gbSeconds: number;
  computeMicroUsd: number;
}

/**
 * One interval a sandbox ran, as the ledger keeps it (table `usage`): pk `sbx#<sandbox id>#<generation>`,
 * sk the interval's start (ISO), so a repeated report of the same interval is the same key and its
 * conditional put changes nothing. Never edited; a correction would be a record of its own.
 */
export interface ComputeRecord extends UsageAmounts {
  sandboxId: string;
  generation: number;
  orgId: string;
  userId: string;
  specId: string;
  /** The UTC day the interval starts on (`YYYY-MM-DD`): the day whose totals it adds to. */
  day: string;
  from: string;
  to: string;
  cpuUnits: number;
  memoryMiB: number;
  resourceFactor: number;
  price: ComputePrice;
  recordedAt: string;
}

/** Platform LLM totals (the gateway's records): calls, tokens by kind, cost in micro-USD. */
export interface LlmAmounts {
  llmCalls?: number;
  llmInputTokens?: number;
  llmOutputTokens?: number;
  llmCachedTokens?: number;
  llmCacheWriteTokens?: number;
  llmMicroUsd?: number;
}

/** A day's totals (of an organization, or of one user in it, or of one model); LLM members once it had calls. */
export interface DayTotals extends UsageAmounts, LlmAmounts {
  day: string;
  userId?: string;
  model?: string;
  /** Compute records added (LLM records count in `llmCalls`). */
  records: number;
  /** When a writer last added to it (wall clock of the write): the reconcile leaves an item that recent alone. */
  lastAt?: string;
}

/** Which day total: the organization's, one user's in it, or one platform model's in it. */
export interface TotalsKey {
  orgId: string;
  day: string;
  userId?: string;
  model?: string;
}

/** What a repair adds to a total: the difference between its records' sums and what it holds. */
export type TotalsDelta = Partial<Record<Exclude<keyof DayTotals, 'day' | 'userId' | 'model' | 'lastAt'>, number>>;

/** A record of the ledger as index `byDay` returns it: compute or platform LLM, told apart by `kind`. */
export type UsageRecord = (ComputeRecord & { kind: 'compute' }) | (LlmRecord & { kind: 'llm' });

/**
 * The usage ledger. Writes: the record (conditional), then the (organization, day) and (user, day)
 * totals, only when the record's put succeeded: at most three writes per accruing heartbeat, none for
 * a duplicate. Reads: totals by day range, O(days) (O(days x users) for the per-user view).
 */
export interface UsageStore {
  /** The end of the last recorded interval of a sandbox's generation, or undefined before its first. */
  lastComputeEnd(sandboxId: string, generation: number): Promise<string | undefined>;
  /**
   * Puts the record if its key is new, then adds it to its totals; undefined (nothing written) for a
   * repeat, else the organization's day totals as its `ADD` left them (DynamoDB serializes the ADDs on
   * that item, so racing writers each see a different total: who crosses a threshold is decided there).
   */
  recordCompute(record: ComputeRecord): Promise<DayTotals | undefined>;
  /** An organization's day totals from `fromDay` to `toDay` inclusive, in day order. */
  orgDays(orgId: string, fromDay: string, toDay: string): Promise<DayTotals[]>;
  /** One user's day totals within an organization. */
  userDays(orgId: string, userId: string, fromDay: string, toDay: string): Promise<DayTotals[]>;
  /** Every user's day totals within an organization. */
  orgUserDays(orgId: string, fromDay: string, toDay: string): Promise<DayTotals[]>;
  /** An organization's platform-LLM day totals per model (`group_by=model`). */
  orgModelDays(orgId: string, fromDay: string, toDay: string): Promise<DayTotals[]>;
  /** An organization's totals for the calendar month (UTC) of `day`, summed from its day totals (platform LLM cost included). */
  monthOf(orgId: string, day: string): Promise<UsageAmounts & { llmMicroUsd: number }>;
  /**
   * The records (compute and LLM) of a UTC day, a page at a time (index `byDay`), in (organization,
   * start) order; with `orgId`, that organization's only.
   */
  dayRecords(day: string, orgId?: string): AsyncIterable<UsageRecord[]>;
  /**
   * The daily reconcile's repair: `ADD`s `delta` to the total if its `records` and `llmCalls` are still
   * what `seen` held (absent: the item must not exist), so a writer that added meanwhile is never lost;
   * false when one did (the next run looks again).
   */
  repairTotals(key: TotalsKey, seen: DayTotals | undefined, delta: TotalsDelta): Promise<boolean>;
  /** The records of a sandbox's generation (tests, reconcile). */
  computeRecords(sandboxId: string, generation: number): Promise<ComputeRecord[]>;
  /** A prepaid organization's credit account (its grants), or undefined before the first grant. */
  credits(orgId: string): Promise<CreditAccount | undefined>;
  /**
   * Adds a grant to the account (one `ADD`; the first grant also sets `since` and `openingMicroUsd`,
   * which later grants keep). Returns the account after it.
   */
  grantCredits(orgId: string, microUsd: number, day: string, openingMicroUsd: number): Promise<CreditAccount>;
  /** Puts a notice if none exists for its (organization, period, limit, threshold): true for the one writer that did. */
  claimNotice(notice: UsageNotice): Promise<boolean>;
  /** An organization's notices, newest period first; `after` is the last page's last key. */
  notices(orgId: string, limit: number, after?: string): Promise<{ items: UsageNotice[]; last?: string }>;
}

/**
 * A prepaid organization's credits (table `usage`, pk `credits#<org>`, sk `account`). The balance is
 * never stored: it is `grantedMicroUsd` minus what the organization's day totals hold from `since` on
 * (less `openingMicroUsd`, what the first grant's day held before it), so no heartbeat writes a debit:
 * the debit rides on the organization-day item the record already adds to (docs/billing.md).
 */
export interface CreditAccount {
  grantedMicroUsd: number;
  /** The UTC day of the first grant: usage from then on debits the credits. */
  since: string;
  /** The organization's usage on `since` before the first grant (not debited). */
  openingMicroUsd: number;
  grants: number;
}

/** The limits a notice is about: the plan's monthly ones and the prepaid balance. */
export type NoticeLimit = 'sandbox_hours_per_month' | 'monthly_spend_usd' | 'credits';

/**
 * An 80% / 100% notice (table `usage`, pk `notice#<org>`, sk `<period>#<limit>#<threshold>`): one per
 * (organization, limit, threshold, month), the key decided by a conditional put among racing writers.
 */
export interface UsageNotice {
  orgId: string;
  /** The calendar month (UTC, `YYYY-MM`) it was crossed in. */
  period: string;
  limit: NoticeLimit;
  threshold: 80 | 100;
  /** What was used when it was crossed, and the limit: hours for `sandbox_hours_per_month`, USD otherwise. */
  used: number;
  limitValue: number;
  unit: 'hours' | 'USD';
  at: string;
}
