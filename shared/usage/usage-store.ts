import type { LlmRecord } from '#shared/llm/ledger.ts';
import type { ComputePrice, StoragePrice } from '#shared/usage/prices.ts';

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
 * conditional put changes nothing. Never edited; a correction is a record of its own (`CorrectionRecord`).
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
  /**
   * Set when a heartbeat came after more than two heartbeat intervals unheard (docs/billing.md, "Not
   * billed"): the record bills to `to` (one interval past the last sign of life) and the time from `to`
   * to this is not billed; the generation's next interval starts here.
   */
  unbilledUntil?: string;
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

/**
 * One interval a sandbox's workspace snapshot was held (table `usage`): pk `stor#<sandbox id>`, sk the
 * interval's start (ISO), so closing the same interval again is the same key and writes nothing. Closed
 * when the held bytes change (a newer snapshot, the sandbox's delete) and at each UTC day's end (an
 * interval never spans two days). Never edited.
 */
export interface StorageRecord {
  sandboxId: string;
  orgId: string;
  userId: string;
  /** The UTC day of the interval (`from`'s). */
  day: string;
  from: string;
  to: string;
  seconds: number;
  /** The bytes held (the sandbox's current snapshot). */
  bytes: number;
  /** bytes x seconds / 2^20, rounded half-even. */
  mibSeconds: number;
  storageMicroUsd: number;
  price: StoragePrice;
  recordedAt: string;
}

/**
 * What a sandbox holds now (table `usage`, pk `storheld`, sk the sandbox id): the bytes of its current
 * snapshot since `since`. Its next record starts at `since`; one partition, so the daily close lists them.
 */
export interface StorageHolding {
  sandboxId: string;
  orgId: string;
  userId: string;
  bytes: number;
  since: string;
  /** The snapshot's object key: a late report of an older snapshot never replaces a newer one's holding. */
  key: string;
}

/** Workspace storage totals (snapshot records): MiB-seconds held and their cost. */
export interface StorageAmounts {
  storageRecords?: number;
  storageMibSeconds?: number;
  storageMicroUsd?: number;
}

/** Operators' corrections added to a day (docs/billing.md, "Corrections"): how many, and their signed sum. */
export interface CorrectionAmounts {
  corrections?: number;
  correctionMicroUsd?: number;
}

/**
 * An operator's correction (table `usage`, pk `corr#<org>`, sk its id): a record of its own, never an edit of
 * another. Signed integer micro-USD applied to `day` (whose totals it adds to, the organization's and, with
 * a user, that user's); its id is a hash of what it says, so the same correction written twice counts once.
 */
export interface CorrectionRecord {
  id: string;
  orgId: string;
  /** The member it applies to; null for the organization as a whole. */
  userId: string | null;
  day: string;
  microUsd: number;
  reason: string;
  /** Who wrote it (`operator:<user id>`) and when. */
  operator: string;
  at: string;
}

/**
 * LLM usage the agent itself reported for a user's own key (docs/billing.md, "The agent's own reports"):
 * informational, never billed, never counted in a limit; kept on the same day items, apart from the
 * platform's `llm*` members.
 */
export interface AgentAmounts {
  agentCalls?: number;
  agentInputTokens?: number;
  agentOutputTokens?: number;
  agentMicroUsd?: number;
}

/**
 * A conversation's LLM usage as its agent reported it (its cumulative `metrics`, at event `seq`), for a
 * user's own key. Kept per conversation (table `usage`, pk `agentconv#<user id>#<conversation id>`, sk
 * `latest`): only a later `seq` replaces it, and what it adds over the last one goes to the day totals'
 * `agent*` members. Informational: never billed, never counted in a limit.
 */
export interface AgentReport {
  orgId: string;
  userId: string;
  conversationId: string;
  seq: number;
  model: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** The agent's cumulative cost, in integer micro-USD (its own price table). */
  microUsd: number;
  /** The UTC day it was received: the day whose totals its increase goes to. */
  day: string;
  at: string;
}

/** The agent's own reports' store (adapter `agentReports`: only the ingest carries it). */
export interface AgentReports {
  /**
   * Keeps the agent's report if its `seq` is later than the conversation's last, and adds its increase
   * over the highest so far (never negative) to the (user, day) and (organization, day) totals' `agent*`
   * members: one conditional write, two more when it increased; a repeat or an older report nothing more.
   */
  recordAgentReport(report: AgentReport): Promise<boolean>;
}

/** A day's totals (of an organization, or of one user in it, or of one model); LLM members once it had calls. */
export interface DayTotals extends UsageAmounts, LlmAmounts, StorageAmounts, AgentAmounts, CorrectionAmounts {
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

/** A record of the ledger as index `byDay` returns it: compute, platform LLM or storage, told apart by `kind`. */
export type UsageRecord =
  | (ComputeRecord & { kind: 'compute' })
  | (LlmRecord & { kind: 'llm' })
  | (StorageRecord & { kind: 'storage' })
  | (CorrectionRecord & { kind: 'correction' });

/**
 * The usage ledger. Writes: the record (conditional), then the (organization, day) and (user, day)
 * totals, only when the record's put succeeded: at most three writes per accruing heartbeat, none for
 * a duplicate. Reads: totals by day range, O(days) (O(days x users) for the per-user view).
 */
export interface UsageStore {
  /** Where the next interval of a sandbox's generation starts (its last record's `unbilledUntil ?? to`), or undefined before its first. */
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
  /** A sandbox's storage holding, or undefined when it holds no snapshot. */
  storageHolding(sandboxId: string): Promise<StorageHolding | undefined>;
  /**
   * Replaces the holding (`next`; null removes it) if it is still as `seen` (its `since`; undefined: none
   * exists); false when another writer moved it first.
   */
  moveHolding(sandboxId: string, seen: StorageHolding | undefined, next: StorageHolding | null): Promise<boolean>;
  /** Puts the storage record if its key is new, then adds it to its day totals; false (nothing written) for a repeat. */
  recordStorage(record: StorageRecord): Promise<boolean>;
  /**
   * Puts an operator's correction if its id is new, then adds it to its day totals (the organization's; the
   * user's too when it names one); false (nothing written) when that correction exists already.
   */
  recordCorrection(record: CorrectionRecord): Promise<boolean>;
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
