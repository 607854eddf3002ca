import { createHash } from 'node:crypto';
import { daysOf } from '#shared/billing/export.ts';
import { recordMicroUsd } from '#shared/billing/focus.ts';
import { logger } from '#shared/logging.ts';
import type { UsageRecord, UsageStore } from '#shared/usage/usage-store.ts';

/*
 * The optional Stripe adapter (docs/billing.md, "Stripe"): usage sent as aggregates, one meter event per
 * (organization, meter, UTC hour), through Stripe's v2 meter event stream (a session token, then up to 100
 * events a request). Our own fetch to configurable base URLs, so tests point it at a loopback fake.
 */

/** The meters, by the `event_name` the operator's Stripe meters are created with; values are micro-USD. */
export const STRIPE_METERS = {
  compute: 'acs_compute_micro_usd',
  llm: 'acs_llm_micro_usd',
  storage: 'acs_storage_micro_usd',
} as const;
export type MeterKey = keyof typeof STRIPE_METERS;
/** The Stripe API version we speak (the `stripe` package's, whose parameter types the test fake checks). */
export const STRIPE_API_VERSION = '2026-10-28.endive';
/** Stripe takes events of the past 35 days only. */
export const STRIPE_MAX_AGE_DAYS = 35;
/** An hour is reported once it ended this long ago (a heartbeat's record of its last seconds lands meanwhile). */
export const STRIPE_HOUR_GRACE_MS = 10 * 60_000;
const BATCH = 100;

export interface StripeConfig {
  /** `https://api.stripe.com` (STRIPE_API_BASE). */
  apiBase: string;
  /** `https://meter-events.stripe.com` (STRIPE_METER_EVENTS_BASE). */
  meterEventsBase: string;
  /** The secret key, read when first needed (env locally, SSM/Secrets Manager on AWS); never logged. */
  apiKey: () => Promise<string>;
}

export interface MeterEvent {
  event_name: string;
  identifier: string;
  payload: { stripe_customer_id: string; value: string };
  timestamp: string;
}

/** A refusal from Stripe (or the way there), with no key or token in its message. */
export class StripeError extends Error {
  override name = 'StripeError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The two v2 calls we make, with the session token kept until it is about to expire (or refused). */
export class StripeMeterClient {
  private session: { token: string; expiresAt: number } | undefined;

  constructor(
    private readonly config: StripeConfig,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  private async post(url: string, bearer: string, body: unknown): Promise<unknown> {
    const res = await this.fetchImpl(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${bearer}`,
        'content-type': 'application/json',
        'stripe-version': STRIPE_API_VERSION,
      },
      body: JSON.stringify(body),
    });
    return this.read(url, res);
  }

  /** A v1 GET with the secret key (form-style query parameters). */
  private async get(path: string, query: Record<string, string>): Promise<unknown> {
    const url = `${this.config.apiBase}${path}?${new URLSearchParams(query)}`;
    const res = await this.fetchImpl(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${await this.config.apiKey()}`, 'stripe-version': STRIPE_API_VERSION },
    });
    return this.read(url, res);
  }

  private async read(url: string, res: Response): Promise<unknown> {
    const text = await res.text();
    if (!res.ok) {
      let detail = text.slice(0, 300);
      try {
        detail = String((JSON.parse(text) as { error?: { message?: string } }).error?.message ?? detail);
      } catch {
        // not JSON: its first characters
      }
      throw new StripeError(`Stripe answered ${res.status} to ${new URL(url).pathname}: ${detail}`, res.status);
    }
    return text ? JSON.parse(text) : {};
  }

  private async token(): Promise<string> {
    // A session lasts 15 minutes: a new one a minute before it ends.
    if (this.session && this.session.expiresAt - 60_000 > this.now()) return this.session.token;
    const out = (await this.post(
      `${this.config.apiBase}/v2/billing/meter_event_session`,
      await this.config.apiKey(),
      {},
    )) as { authentication_token?: string; expires_at?: string };
    if (!out.authentication_token) throw new StripeError('Stripe gave no meter event session token', 502);
    this.session = { token: out.authentication_token, expiresAt: Date.parse(out.expires_at ?? '') || 0 };
    return this.session.token;
  }

  private meterIds: Promise<Map<string, string>> | undefined;

  /** The id (`mtr_...`) of the meter whose `event_name` is `eventName`: the meters listed once per client, paged. */
  async meterId(eventName: string): Promise<string> {
    this.meterIds ??= (async () => {
      const ids = new Map<string, string>();
      let after: string | undefined;
      for (let page = 0; page < 100; page++) {
        const out = (await this.get('/v1/billing/meters', {
          limit: '100',
          ...(after ? { starting_after: after } : {}),
        })) as { data?: { id: string; event_name: string }[]; has_more?: boolean };
        for (const m of out.data ?? []) ids.set(m.event_name, m.id);
        if (!out.has_more || !out.data?.length) break;
        after = out.data.at(-1)!.id;
      }
      return ids;
    })().catch((err: unknown) => {
      this.meterIds = undefined;
      throw err;
    });
    const id = (await this.meterIds).get(eventName);
    if (!id) throw new StripeError(`Stripe has no meter with event_name ${eventName}`, 502);
    return id;
  }

  /**
   * What Stripe has summed of a customer's events of a meter from `startSeconds` to `endSeconds` (epoch seconds,
   * end exclusive, on minute boundaries): `GET /v1/billing/meters/{id}/event_summaries`. Eventually consistent
   * (Stripe aggregates asynchronously): read only for events sent long ago.
   */
  async summed(eventName: string, customer: string, startSeconds: number, endSeconds: number): Promise<bigint> {
    const id = await this.meterId(eventName);
    const out = (await this.get(`/v1/billing/meters/${encodeURIComponent(id)}/event_summaries`, {
      customer,
      start_time: String(startSeconds),
      end_time: String(endSeconds),
    })) as { data?: { aggregated_value: number }[] };
    // One summary for the whole range (no value_grouping_window); none when there were no events.
    return (out.data ?? []).reduce((t, d) => t + BigInt(Math.round(d.aggregated_value)), 0n);
  }

  /** Sends up to 100 events in one request; a refused (expired) session is replaced once. */
  async send(events: MeterEvent[]): Promise<void> {
    if (events.length > BATCH) throw new Error(`At most ${BATCH} meter events a request`);
    const url = `${this.config.meterEventsBase}/v2/billing/meter_event_stream`;
    try {
      await this.post(url, await this.token(), { events });
    } catch (err) {
      if (!(err instanceof StripeError && err.status === 401)) throw err;
      this.session = undefined;
      await this.post(url, await this.token(), { events });
    }
  }
}

const DEFAULT_API_BASE = 'https://api.stripe.com';
const DEFAULT_METER_EVENTS_BASE = 'https://meter-events.stripe.com';

/** Local: `STRIPE_API_KEY` (none: no Stripe), `STRIPE_API_BASE`, `STRIPE_METER_EVENTS_BASE`; the key is read per session. */
export function envStripe(env: NodeJS.ProcessEnv): StripeMeterClient | null {
  if (!env.STRIPE_API_KEY?.trim()) return null;
  return new StripeMeterClient({
    apiBase: env.STRIPE_API_BASE?.trim() || DEFAULT_API_BASE,
    meterEventsBase: env.STRIPE_METER_EVENTS_BASE?.trim() || env.STRIPE_API_BASE?.trim() || DEFAULT_METER_EVENTS_BASE,
    apiKey: async () => {
      const key = env.STRIPE_API_KEY?.trim();
      if (!key) throw new StripeError('STRIPE_API_KEY is not set', 500);
      return key;
    },
  });
}

/**
 * AWS: the key's ARN (STRIPE_API_KEY_ARN, from the context `stripe`; empty: no Stripe), read on first use with
 * `read` (SSM SecureString or Secrets Manager) and kept five minutes, so a rotated key is used without a redeploy.
 */
export function arnStripe(env: NodeJS.ProcessEnv, read: (arn: string) => Promise<string>): StripeMeterClient | null {
  const arn = env.STRIPE_API_KEY_ARN?.trim();
  if (!arn) return null;
  let cached: { value: Promise<string>; at: number } | undefined;
  return new StripeMeterClient({
    apiBase: env.STRIPE_API_BASE?.trim() || DEFAULT_API_BASE,
    meterEventsBase: env.STRIPE_METER_EVENTS_BASE?.trim() || DEFAULT_METER_EVENTS_BASE,
    apiKey: () => {
      if (!cached || Date.now() - cached.at > 300_000) {
        const value = read(arn);
        cached = { value, at: Date.now() };
        value.catch(() => (cached = undefined));
      }
      return cached.value;
    },
  });
}

/** The identifier of an (organization, meter, hour): the same aggregate always has the same one. */
export function meterIdentifier(orgId: string, meter: string, hour: string): string {
  return `acs_${createHash('sha256').update(`${orgId}\n${meter}\n${hour}`).digest('hex').slice(0, 48)}`;
}

/**
 * The identifier of a correction of an (organization, meter, hour) already reported: records written after
 * the hour was reported (a late heartbeat, a day's storage closed at midnight), sent as the difference. It
 * is derived from what was reported before it (`reportedBefore`, micro-USD), so each correction of an hour has
 * its own, and the same correction always the same one.
 */
export function correctionIdentifier(orgId: string, meter: string, hour: string, reportedBefore: bigint): string {
  return `acs_${createHash('sha256').update(`${orgId}\n${meter}\n${hour}\n+${reportedBefore}`).digest('hex').slice(0, 48)}`;
}

/** What was reported of one (organization, meter, hour): the sum of its marks, and corrections claimed but not confirmed sent. */
export interface ReportedAggregate {
  /** Every mark: the aggregate's and its corrections', confirmed or claimed. */
  micro: bigint;
  /** The marks Stripe is known to have taken: the aggregate's and its confirmed corrections'. */
  confirmed: bigint;
  pending: { identifier: string; value: string; reportedBefore: string; claimedAt: string }[];
}

/**
 * A claimed correction older than this may have left Stripe's de-duplication window (about 24 hours): before it
 * is sent again, Stripe's own sum of the hour says whether its first send was taken. An hour of margin.
 */
export const STRIPE_DEDUP_SAFE_MS = 23 * 3_600_000;

/**
 * Which claimed corrections Stripe took, from its sum of the hour: the one subset of `values` that adds `confirmed`
 * up to `summed`. Undefined when none or more than one does (or too many to try): then nothing is decided.
 */
export function takenSubset(values: bigint[], confirmed: bigint, summed: bigint): number[] | undefined {
  if (values.length > 12) return undefined;
  let found: number[] | undefined;
  for (let mask = 0; mask < 1 << values.length; mask++) {
    const picked = values.flatMap((_, i) => (mask & (1 << i) ? [i] : []));
    if (confirmed + picked.reduce((t, i) => t + values[i]!, 0n) !== summed) continue;
    if (found) return undefined;
    found = picked;
  }
  return found;
}

/** The UTC hour (`YYYY-MM-DDTHH:00:00Z`) of an ISO instant. */
const hourOf = (iso: string) => `${iso.slice(0, 13)}:00:00Z`;

/** Where the customer mappings and the `reported` marks live (table `usage`). */
export interface StripeStore {
  customer(orgId: string): Promise<string | undefined>;
  setCustomer(orgId: string, customerId: string): Promise<string | undefined>;
  /** What was reported of an organization's hours from `fromHour` to `toHour` (inclusive), by `<meter>#<hour>`. */
  reported(orgId: string, fromHour: string, toHour: string): Promise<Map<string, ReportedAggregate>>;
  /** Marks an (organization, meter, hour) reported; false when it was already (a racing run). */
  markReported(orgId: string, meter: string, hour: string, identifier: string, value: string): Promise<boolean>;
  /**
   * Claims the correction of an (organization, meter, hour) after `reportedBefore` micro-USD were reported
   * (a conditional put, before it is sent, so its value and identifier never part); false when a racing run did.
   */
  claimCorrection(
    orgId: string,
    meter: string,
    hour: string,
    reportedBefore: string,
    identifier: string,
    value: string,
  ): Promise<boolean>;
  /** The claimed correction was taken by Stripe. */
  confirmCorrection(orgId: string, meter: string, hour: string, reportedBefore: string): Promise<void>;
}

export interface StripeReport {
  from: string;
  to: string;
  /** Events Stripe took in this run. */
  sent: number;
  /** (organization, meter, hour) aggregates marked reported by an earlier run: not sent again. */
  already_reported: number;
  /** Organizations with usage in the period but no Stripe customer: not reported. */
  skipped_orgs: string[];
  /** Hours not ended (plus the grace) yet: left to the next run. */
  open_hours: number;
  /** Of `sent`, corrections: records written after their hour was reported, sent as the difference. */
  corrections: number;
  /**
   * Claimed corrections older than Stripe's de-duplication window that Stripe's sum of their hour does not
   * account for (a customer shared or remapped): left claimed and not sent, logged for the operator.
   */
  unresolved_corrections: number;
}

/** Refusals a caller maps to 422 (the period) or 409 (not configured). */
export class StripeReportRefused extends Error {
  override name = 'StripeReportRefused';
  constructor(
    message: string,
    readonly field: 'from' | 'to' | null,
  ) {
    super(message);
  }
}

/**
 * Reports the ledger of UTC days `from`..`to` to Stripe: each organization's compute and platform-LLM cost per
 * hour as one event per meter, for organizations mapped to a customer. An aggregate is marked `reported` (a
 * conditional put) after Stripe took its batch, so a re-run sends nothing new, beyond Stripe's 24-hour
 * de-duplication too; a mark lost after sending is sent again with the same identifier, which Stripe
 * de-duplicates within its window.
 */
export class StripeReporter {
  constructor(
    private readonly usage: UsageStore,
    private readonly store: StripeStore,
    private readonly client: StripeMeterClient | null,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async report(from: string, to: string): Promise<StripeReport> {
    if (!this.client)
      throw new StripeReportRefused('Stripe is not configured for this deployment (docs/billing.md, "Stripe")', null);
    const now = this.now();
    const oldest = new Date(now.getTime() - STRIPE_MAX_AGE_DAYS * 86_400_000).toISOString().slice(0, 10);
    if (from < oldest)
      throw new StripeReportRefused(
        `from must be within Stripe's ${STRIPE_MAX_AGE_DAYS} days (${oldest} or later): Stripe refuses older meter events`,
        'from',
      );
    // (organization, meter, hour) -> micro-USD
    const sums = new Map<string, Map<string, bigint>>();
    let open = 0;
    const add = (orgId: string, meter: MeterKey, hour: string, micro: number) => {
      const byKey = sums.get(orgId) ?? sums.set(orgId, new Map()).get(orgId)!;
      const key = `${STRIPE_METERS[meter]}#${hour}`;
      byKey.set(key, (byKey.get(key) ?? 0n) + BigInt(micro));
    };
    const ended = (hour: string) => Date.parse(hour) + 3_600_000 + STRIPE_HOUR_GRACE_MS <= now.getTime();
    const openHours = new Set<string>();
    for (const day of daysOf(from, to))
      for await (const page of this.usage.dayRecords(day))
        for (const r of page as UsageRecord[]) {
          // An operator's correction is not a meter event: it goes to the customer as a Stripe credit note or
          // invoice item (docs/billing.md, "Corrections").
          if (r.kind === 'correction') continue;
          const hour = hourOf(r.kind === 'llm' ? r.at : r.from);
          if (!ended(hour)) {
            openHours.add(`${r.orgId}#${hour}`);
            continue;
          }
          add(r.orgId, r.kind, hour, recordMicroUsd(r));
        }
    open = openHours.size;
    const out: StripeReport = {
      from,
      to,
      sent: 0,
      already_reported: 0,
      skipped_orgs: [],
      open_hours: open,
      corrections: 0,
      unresolved_corrections: 0,
    };
    const pending: { orgId: string; meter: string; hour: string; event: MeterEvent }[] = [];
    const corrections: { orgId: string; meter: string; hour: string; before: string; event: MeterEvent }[] = [];
    for (const orgId of [...sums.keys()].sort()) {
      const customer = await this.store.customer(orgId);
      if (!customer) {
        out.skipped_orgs.push(orgId);
        continue;
      }
      const marks = await this.store.reported(orgId, `${from}T00:00:00Z`, `${to}T23:00:00Z`);
      for (const [key, micro] of [...sums.get(orgId)!].sort(([a], [b]) => (a < b ? -1 : 1))) {
        const [meter, hour] = key.split('#') as [string, string];
        const reported = marks.get(key);
        if (reported) {
          const event = (identifier: string, value: string): MeterEvent => ({
            event_name: meter,
            identifier,
            payload: { stripe_customer_id: customer, value },
            timestamp: hour,
          });
          // Claimed by an earlier run that died before Stripe's answer was confirmed: sent again as it was
          // (Stripe de-duplicates it within its window; past it, its sum of the hour says which were taken).
          for (const p of await this.unconfirmed(orgId, customer, meter, hour, reported, now, out))
            corrections.push({ orgId, meter, hour, before: p.reportedBefore, event: event(p.identifier, p.value) });
          const late = micro - reported.micro;
          if (late <= 0n) {
            out.already_reported++;
            continue;
          }
          // Records written after the hour was reported: the difference, as a correction of its own.
          const before = reported.micro.toString();
          const identifier = correctionIdentifier(orgId, meter, hour, reported.micro);
          if (await this.store.claimCorrection(orgId, meter, hour, before, identifier, late.toString()))
            corrections.push({ orgId, meter, hour, before, event: event(identifier, late.toString()) });
          continue;
        }
        if (micro <= 0n) continue;
        const identifier = meterIdentifier(orgId, meter, hour);
        pending.push({
          orgId,
          meter,
          hour,
          event: {
            event_name: meter,
            identifier,
            payload: { stripe_customer_id: customer, value: micro.toString() },
            timestamp: hour,
          },
        });
      }
    }
    for (let i = 0; i < pending.length; i += BATCH) {
      const batch = pending.slice(i, i + BATCH);
      await this.client.send(batch.map((p) => p.event));
      out.sent += batch.length;
      await Promise.all(
        batch.map((p) => this.store.markReported(p.orgId, p.meter, p.hour, p.event.identifier, p.event.payload.value)),
      );
    }
    for (let i = 0; i < corrections.length; i += BATCH) {
      const batch = corrections.slice(i, i + BATCH);
      await this.client.send(batch.map((c) => c.event));
      out.sent += batch.length;
      out.corrections += batch.length;
      await Promise.all(batch.map((c) => this.store.confirmCorrection(c.orgId, c.meter, c.hour, c.before)));
    }
    return out;
  }

  /**
   * The claimed corrections of an hour to send again. Within Stripe's de-duplication window, all of them (a
   * repeat of one taken is de-duplicated). Once one is older than that, Stripe's sum of the customer's hour
   * decides: the taken ones (the one subset that adds the confirmed marks up to Stripe's sum) are confirmed and
   * not sent again, the others are; when no single subset fits, none is sent (`unresolved_corrections`).
   */
  private async unconfirmed(
    orgId: string,
    customer: string,
    meter: string,
    hour: string,
    reported: ReportedAggregate,
    now: Date,
    out: StripeReport,
  ): Promise<ReportedAggregate['pending']> {
    const pending = reported.pending;
    if (!pending.some((p) => now.getTime() - Date.parse(p.claimedAt) > STRIPE_DEDUP_SAFE_MS)) return pending;
    const start = Date.parse(hour) / 1000;
    const summed = await this.client!.summed(meter, customer, start, start + 3600);
    const taken = takenSubset(
      pending.map((p) => BigInt(p.value)),
      reported.confirmed,
      summed,
    );
    if (!taken) {
      out.unresolved_corrections += pending.length;
      logger.error('stripe.correction unresolved', {
        orgId,
        meter,
        hour,
        confirmed: String(reported.confirmed),
        summed: String(summed),
        pending: pending.map((p) => p.value),
      });
      return [];
    }
    for (const i of taken) await this.store.confirmCorrection(orgId, meter, hour, pending[i]!.reportedBefore);
    return pending.filter((_, i) => !taken.includes(i));
  }
}
