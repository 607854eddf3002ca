import { logger } from '#shared/logging.ts';
import type { ConversationCounter, ConversationStore } from '#shared/conversations/conversation-store.ts';
import { holdsSlot } from '#shared/sandboxes/lifecycle.ts';
import type { RunningCounter, SandboxStore } from '#shared/sandboxes/sandbox-store.ts';
import type { DayTotals, TotalsDelta, TotalsKey, UsageRecord, UsageStore } from '#shared/usage/usage-store.ts';

/**
 * How long a writer may still land an `ADD` on a total after its record's put: the longest function
 * time-out that writes records (the LLM gateway's 15 minutes), with a margin. A record older than this
 * either has its totals or never will (its writer died).
 */
export const SETTLED_MS = 20 * 60_000;
/**
 * How long two looks at a counter are apart: longer than any function that moves a counter runs (event
 * functions 60 s, routes 30 s), so a writer caught between its two writes has finished or died by the second.
 */
export const SETTLE_MS = 65_000;

export interface ReconcileDeps {
  usage: UsageStore;
  sandboxes: SandboxStore;
  conversations: ConversationStore;
  now?: () => Date;
  settledMs?: number;
  settleMs?: number;
  /** Per-user recounts in flight at once. */
  concurrency?: number;
}

export interface RepairCount {
  /** Items compared with what their records (or records of sandboxes, conversations) imply. */
  checked: number;
  repaired: number;
  /** Left alone this run: written to within the settled time, or changing between the two looks. */
  busy: number;
  /** The conditional repair lost to a live writer: left to the next run. */
  raced: number;
}

export interface ReconcileSummary {
  days: string[];
  totals: RepairCount;
  slots: RepairCount;
  conversations: RepairCount;
}

const COUNTED = [
  'seconds',
  'factorSeconds',
  'vcpuSeconds',
  'gbSeconds',
  'computeMicroUsd',
  'records',
  'llmCalls',
  'llmInputTokens',
  'llmOutputTokens',
  'llmCachedTokens',
  'llmCacheWriteTokens',
  'llmMicroUsd',
  'storageRecords',
  'storageMibSeconds',
  'storageMicroUsd',
  'corrections',
  'correctionMicroUsd',
] as const satisfies readonly (keyof TotalsDelta)[];
type Sums = Record<(typeof COUNTED)[number], number>;

/** What one total's records add up to, and when the newest of them was written. */
interface Implied {
  sums: Sums;
  newest: string;
}

const zero = (): Sums => Object.fromEntries(COUNTED.map((f) => [f, 0])) as Sums;
const count = (): RepairCount => ({ checked: 0, repaired: 0, busy: 0, raced: 0 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10);

/** A record's share of its totals, and when it was written (compute, storage: `recordedAt`; LLM: `at`). */
function contribution(r: UsageRecord): { sums: Sums; written: string } {
  const sums = zero();
  if (r.kind === 'storage') {
    Object.assign(sums, { storageRecords: 1, storageMibSeconds: r.mibSeconds, storageMicroUsd: r.storageMicroUsd });
    return { sums, written: r.recordedAt };
  }
  if (r.kind === 'correction') {
    Object.assign(sums, { corrections: 1, correctionMicroUsd: r.microUsd });
    return { sums, written: r.at };
  }
  if (r.kind === 'compute') {
    for (const f of ['seconds', 'factorSeconds', 'vcpuSeconds', 'gbSeconds', 'computeMicroUsd'] as const)
      sums[f] = Number(r[f] ?? 0);
    sums.records = 1;
    return { sums, written: r.recordedAt };
  }
  Object.assign(sums, {
    llmCalls: 1,
    llmInputTokens: r.input,
    llmOutputTokens: r.output,
    llmCachedTokens: r.cachedInput,
    llmCacheWriteTokens: r.cacheWriteInput,
    llmMicroUsd: r.costMicroUsd,
  });
  return { sums, written: r.at };
}

function add(map: Map<string, Implied>, key: string, c: { sums: Sums; written: string }) {
  const cur = map.get(key) ?? { sums: zero(), newest: '' };
  for (const f of COUNTED) cur.sums[f] += c.sums[f];
  if (c.written > cur.newest) cur.newest = c.written;
  map.set(key, cur);
}

/** Runs `work` over `items`, `limit` at a time. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/**
 * The daily reconcile (docs/billing.md, "The daily reconcile"): the totals of the last two UTC days
 * rewritten where their records say otherwise, the organizations' running-slot counters recounted from
 * the sandboxes that hold a slot, the users' conversation counters from their conversations. Every
 * repair is a conditional write on what was read, so a live writer is never lost: it wins, and the
 * next run looks again.
 */
export class UsageReconcile {
  private readonly now: () => Date;
  private readonly settledMs: number;
  private readonly settleMs: number;

  constructor(private readonly deps: ReconcileDeps) {
    this.now = deps.now ?? (() => new Date());
    this.settledMs = deps.settledMs ?? SETTLED_MS;
    this.settleMs = deps.settleMs ?? SETTLE_MS;
  }

  /** The two UTC days before `now`'s: each day is looked at on the two nights after it. */
  static defaultDays(now: Date): string[] {
    const today = Date.parse(now.toISOString().slice(0, 10));
    return [dayOf(today - 2 * 86_400_000), dayOf(today - 86_400_000)];
  }

  async run(options: { days?: string[] } = {}): Promise<ReconcileSummary> {
    const days = options.days ?? UsageReconcile.defaultDays(this.now());
    const totals = count();
    for (const day of days) await this.totalsOf(day, totals);
    // The counters' two looks are SETTLE_MS apart: both kinds wait together.
    const [slots, conversations] = await Promise.all([this.slots(), this.conversationCounters()]);
    const summary = { days, totals, slots, conversations };
    logger.info('usage.reconcile', { ...summary });
    return summary;
  }

  /** A day's records a page at a time; they come in organization order, so one organization's sums are held at once. */
  private async totalsOf(day: string, out: RepairCount): Promise<void> {
    let orgId: string | undefined;
    let org = new Map<string, Implied>();
    for await (const page of this.deps.usage.dayRecords(day)) {
      for (const r of page) {
        if (r.orgId !== orgId) {
          if (orgId !== undefined) await this.repairOrg(orgId, day, org, out);
          orgId = r.orgId;
          org = new Map();
        }
        const c = contribution(r);
        add(org, 'org', c);
        // An organization's own correction (no user) adds to its organization total only.
        if (r.userId !== null) add(org, `user#${r.userId}`, c);
        if (r.kind === 'llm') add(org, `model#${r.model}`, c);
      }
    }
    if (orgId !== undefined) await this.repairOrg(orgId, day, org, out);
  }

  private async repairOrg(orgId: string, day: string, implied: Map<string, Implied>, out: RepairCount) {
    const { usage } = this.deps;
    const [orgDays, users, models] = await Promise.all([
      usage.orgDays(orgId, day, day),
      usage.orgUserDays(orgId, day, day),
      usage.orgModelDays(orgId, day, day),
    ]);
    const stored = new Map<string, { key: TotalsKey; item?: DayTotals }>();
    stored.set('org', { key: { orgId, day }, item: orgDays[0] });
    for (const u of users) stored.set(`user#${u.userId}`, { key: { orgId, day, userId: u.userId }, item: u });
    for (const m of models) stored.set(`model#${m.model}`, { key: { orgId, day, model: m.model }, item: m });
    for (const k of implied.keys())
      if (!stored.has(k)) {
        const [kind, name] = [k.slice(0, k.indexOf('#')), k.slice(k.indexOf('#') + 1)];
        stored.set(k, { key: { orgId, day, ...(kind === 'user' ? { userId: name } : { model: name }) } });
      }
    const cutoff = new Date(this.now().getTime() - this.settledMs).toISOString();
    for (const [k, { key, item }] of stored) {
      out.checked++;
      const want = implied.get(k) ?? { sums: zero(), newest: '' };
      const delta: TotalsDelta = {};
      for (const f of COUNTED) {
        const d = want.sums[f] - Number(item?.[f] ?? 0);
        if (d) delta[f] = d;
      }
      if (!Object.keys(delta).length) continue;
      // A record written within the settled time may still have its ADD on the way; an item added to
      // within it may hold a record the index does not show yet. Either way: the next run.
      if (want.newest >= cutoff || (item?.lastAt ?? '') >= cutoff) {
        out.busy++;
        continue;
      }
      if (await usage.repairTotals(key, item, delta)) {
        out.repaired++;
        logger.warn('usage.reconcile.repaired', { ...key, delta });
      } else out.raced++;
    }
  }

  /** The organizations' running-slot counters against the sandboxes holding a slot. */
  private async slots(): Promise<RepairCount> {
    const out = count();
    const { sandboxes } = this.deps;
    const held = async () => {
      const n = new Map<string, number>();
      for (const r of await sandboxes.listLive()) if (holdsSlot(r)) n.set(r.orgId!, (n.get(r.orgId!) ?? 0) + 1);
      return n;
    };
    const first = await held();
    const orgs = new Set(first.keys());
    for await (const page of sandboxes.runningCounterOrgs()) for (const o of page) orgs.add(o);
    const off: { orgId: string; counter?: RunningCounter; held: number }[] = [];
    for (const orgId of orgs) {
      out.checked++;
      const counter = await sandboxes.runningCounter(orgId);
      if ((counter?.running ?? 0) !== (first.get(orgId) ?? 0))
        off.push({ orgId, counter, held: first.get(orgId) ?? 0 });
    }
    if (!off.length) return out;
    await sleep(this.settleMs);
    const second = await held();
    for (const o of off) {
      const counter = await sandboxes.runningCounter(o.orgId);
      // Unchanged for longer than any writer runs: no start or release is between its two writes.
      if (
        (second.get(o.orgId) ?? 0) !== o.held ||
        counter?.running !== o.counter?.running ||
        counter?.changedAt !== o.counter?.changedAt
      ) {
        out.busy++;
        continue;
      }
      if (await sandboxes.setRunning(o.orgId, counter, o.held)) {
        out.repaired++;
        logger.warn('usage.reconcile.slots', { orgId: o.orgId, from: counter?.running ?? 0, to: o.held });
      } else out.raced++;
    }
    return out;
  }

  /** The users' conversation counters against their conversations. */
  private async conversationCounters(): Promise<RepairCount> {
    const out = count();
    const { conversations } = this.deps;
    const off: { userId: string; counter: ConversationCounter; live: number }[] = [];
    const concurrency = this.deps.concurrency ?? 8;
    for await (const page of conversations.counterUsers())
      await pool(page, concurrency, async (userId) => {
        out.checked++;
        const { counter, live } = await conversations.recount(userId);
        if (counter && counter.conversations !== live) off.push({ userId, counter, live });
      });
    if (!off.length) return out;
    await sleep(this.settleMs);
    await pool(off, concurrency, async (o) => {
      const { counter, live } = await conversations.recount(o.userId);
      if (
        !counter ||
        live !== o.live ||
        counter.conversations !== o.counter.conversations ||
        counter.changedAt !== o.counter.changedAt
      ) {
        out.busy++;
        return;
      }
      if (await conversations.setCount(o.userId, counter, live)) {
        out.repaired++;
        logger.warn('usage.reconcile.conversations', { userId: o.userId, from: counter.conversations, to: live });
      } else out.raced++;
    });
    return out;
  }
}
