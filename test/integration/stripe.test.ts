import { DeleteCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { personUserId } from '#shared/accounts/accounts.ts';
import { stripeKeys } from '#shared/billing/dynamo-stripe-store.ts';
import { correctionIdentifier, meterIdentifier, STRIPE_API_VERSION, STRIPE_METERS } from '#shared/billing/stripe.ts';
import { llmCharge } from '#shared/llm/cost.ts';
import { DynamoLlmLedger } from '#shared/llm/dynamo-ledger.ts';
import type { PlatformModel } from '#shared/llm/platform-models.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { computeCharge, DEFAULT_PRICES_CONFIG, parsePrices } from '#shared/usage/prices.ts';
import { useOperatorStack } from '#test/helpers/operator-stack.ts';
import { startStripeFake, type StripeFake } from '#test/helpers/stripe-fake.ts';

/**
 * The Stripe adapter over HTTP against the local stack and a loopback Stripe that checks every request against
 * the `stripe` package's parameter types (test/helpers/stripe-fake.ts): the operators' customer mapping, a
 * report run sending one event per (organization, meter, hour) with its hash as identifier, a re-run sending
 * nothing, a mark lost after sending re-sent with the same identifier (de-duplicated as Stripe does), an
 * organization without a customer skipped, 36 days refused, Stripe failing and a session expiring, batches of 100.
 */
let stripe: StripeFake;
let usage: DynamoUsageStore;
// The Stripe fake starts before the stack, whose environment names it.
const ops = useOperatorStack({}, async () => {
  stripe = await startStripeFake({ meters: Object.values(STRIPE_METERS), apiVersion: STRIPE_API_VERSION });
  return { STRIPE_API_KEY: stripe.secretKey, STRIPE_API_BASE: stripe.url };
});
const { operator } = ops;
beforeAll(() => {
  usage = new DynamoUsageStore();
});
afterAll(async () => {
  await stripe?.close();
});
const dayBefore = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
const price = parsePrices(DEFAULT_PRICES_CONFIG, 't').compute('us-east-1', false);
const model = { model: 'platform/claude-sonnet', usd_per_mtok: { input: 3, output: 15 }, markup: 0 } as PlatformModel;

let n = 0;
async function compute(orgId: string, day: string, hour: number, seconds: number): Promise<number> {
  const c = computeCharge(seconds, 1024, 2048, price);
  const from = `${day}T${String(hour).padStart(2, '0')}:10:${String(n++ % 60).padStart(2, '0')}.000Z`;
  await usage.recordCompute({
    sandboxId: `sbx-stripe-${n}`,
    generation: 1,
    orgId,
    userId: 'u',
    specId: 'default',
    day,
    from,
    to: from,
    seconds,
    factorSeconds: seconds,
    vcpuSeconds: c.vcpuSeconds,
    gbSeconds: c.gbSeconds,
    computeMicroUsd: c.costMicroUsd,
    cpuUnits: 1024,
    memoryMiB: 2048,
    resourceFactor: 1,
    price,
    recordedAt: from,
  });
  return c.costMicroUsd;
}
async function llm(orgId: string, day: string, hour: number, input: number, output: number): Promise<number> {
  const t = { input, output, cachedInput: 0, cacheWriteInput: 0 };
  const cost = llmCharge(t, model);
  await new DynamoLlmLedger().record({
    requestId: `req-stripe-${n++}`,
    orgId,
    userId: 'u',
    conversationId: 'c',
    model: model.model,
    upstreamModel: 'm',
    ...t,
    costMicroUsd: cost,
    price: { ...model.usd_per_mtok, markup: 0 },
    estimated: false,
    day,
    at: `${day}T${String(hour).padStart(2, '0')}:30:00.000Z`,
  });
  return cost;
}
const report = async (body: unknown) =>
  ops.stack.call('POST', '/api/v1/admin/billing/stripe-reports', { ...(await operator()), body });
const hourIso = (day: string, hour: number) => `${day}T${String(hour).padStart(2, '0')}:00:00Z`;

describe('Stripe: the customer mapping', () => {
  it('operators map an organization (audited); others are refused; an unknown organization is 404; bad ids 422', async () => {
    const key = await ops.stack.newUser('stripe-owner');
    const orgId = await ops.stack.orgOf(key);
    const body = { stripe_customer_id: 'cus_Owner1' };
    expect((await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/billing`, { key, body })).status).toBe(403);
    expect((await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/billing`, { key: null, body })).status).toBe(401);
    const op = await operator();
    const ok = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/billing`, { ...op, body });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ success: true, org_id: orgId, stripe_customer_id: 'cus_Owner1', previous: null });
    const again = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/billing`, {
      ...op,
      body: { stripe_customer_id: 'cus_Owner2' },
    });
    expect(again.body.previous).toBe('cus_Owner1');
    const log = await ops.stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, op);
    expect(log.body.items[0]).toMatchObject({
      action: 'billing_customer_set',
      actor: `operator:${personUserId(ops.idp.issuer, 'op')}`,
      target: orgId,
      fields: ['stripe_customer_id'],
    });
    const unknown = await ops.stack.call('PUT', '/api/v1/admin/orgs/org_000000000000000000000000/billing', {
      ...op,
      body,
    });
    expect(unknown.status).toBe(404);
    for (const bad of [
      { stripe_customer_id: 'acct_123' },
      { stripe_customer_id: 'cus_' },
      { stripe_customer_id: 'cus_a"b' },
      { stripe_customer_id: `cus_${'a'.repeat(65)}` },
      { stripe_customer_id: 'cus_ok', extra: 1 },
      {},
    ]) {
      const res = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/billing`, { ...op, body: bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
    }
    expect((await ops.stack.call('PUT', '/api/v1/admin/orgs/not-an-org/billing', { ...op, body })).status).toBe(422);
  });
});

describe('Stripe: report runs', () => {
  let orgA: string;
  let orgB: string;
  const d2 = dayBefore(2);
  const d1 = dayBefore(1);
  const expected = new Map<string, number>();
  const add = (org: string, meter: string, hour: string, micro: number) => {
    const k = `${org}|${meter}|${hour}`;
    expected.set(k, (expected.get(k) ?? 0) + micro);
  };

  beforeAll(async () => {
    orgA = await ops.stack.orgOf(await ops.stack.newUser('stripe-a'));
    orgB = await ops.stack.orgOf(await ops.stack.newUser('stripe-b'));
    const op = await operator();
    const mapped = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgA}/billing`, {
      ...op,
      body: { stripe_customer_id: 'cus_OrgA' },
    });
    expect(mapped.status).toBe(200);
    for (const [day, hour, seconds] of [
      [d2, 3, 3600],
      [d2, 3, 61],
      [d2, 17, 5],
      [d1, 0, 900],
    ] as const)
      add(orgA, STRIPE_METERS.compute, hourIso(day, hour), await compute(orgA, day, hour, seconds));
    add(orgA, STRIPE_METERS.llm, hourIso(d2, 3), await llm(orgA, d2, 3, 12_000, 800));
    add(orgA, STRIPE_METERS.llm, hourIso(d2, 3), await llm(orgA, d2, 3, 5, 5));
    // Organization B has usage but no customer: skipped.
    await compute(orgB, d2, 4, 100);
  });

  it('sends one event per (organization, meter, hour): identifier its hash, the customer, the micro-USD sum', async () => {
    const res = await report({ from: d2, to: d1 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      from: d2,
      to: d1,
      sent: expected.size,
      already_reported: 0,
      skipped_orgs: [orgB],
    });
    expect(stripe.refusals).toEqual([]);
    const got = new Map(
      stripe.events.map((e) => [`${orgA}|${e.event_name}|${e.timestamp}`, { value: Number(e.payload.value), e }]),
    );
    expect(new Map([...got].map(([k, v]) => [k, v.value]))).toEqual(expected);
    for (const [k, { e }] of got) {
      const [org, meter, hour] = k.split('|') as [string, string, string];
      expect(e.identifier).toBe(meterIdentifier(org, meter, hour));
      expect(e.payload).toEqual({ stripe_customer_id: 'cus_OrgA', value: expect.stringMatching(/^\d+$/) });
    }
    // The secret key opens a session only; the stream gets the session's token, never the key.
    const streamAuth = stripe.requests.filter((r) => r.path.endsWith('meter_event_stream')).map((r) => r.auth);
    expect(streamAuth.length).toBeGreaterThan(0);
    expect(streamAuth.some((a) => a.includes(stripe.secretKey))).toBe(false);
  });

  it('a re-run sends nothing new; a mark lost after sending is re-sent with the same identifier and de-duplicated', async () => {
    const before = stripe.events.length;
    const requests = stripe.requests.length;
    const again = await report({ from: d2, to: d1 });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ sent: 0, already_reported: expected.size });
    expect(stripe.requests.length).toBe(requests);
    // A run that died between Stripe's answer and its mark: the mark is gone, the event was taken.
    const hour = hourIso(d2, 17);
    await documentClient().send(
      new DeleteCommand({
        TableName: tableName('usage'),
        Key: { pk: stripeKeys.marks(orgA), sk: `${hour}#${STRIPE_METERS.compute}` },
      }),
    );
    const resent = await report({ from: d2, to: d1 });
    expect(resent.body).toMatchObject({ sent: 1, already_reported: expected.size - 1 });
    expect(stripe.events.length).toBe(before);
    expect(stripe.duplicates.map((e) => e.identifier)).toEqual([meterIdentifier(orgA, STRIPE_METERS.compute, hour)]);
    expect((await report({ from: d2, to: d1 })).body.sent).toBe(0);
  });

  it('a record written after its hour was reported reaches Stripe exactly once, as a correction of the difference', async () => {
    const day = dayBefore(4);
    const hour = hourIso(day, 11);
    const meter = STRIPE_METERS.compute;
    const taken = () =>
      stripe.events
        .filter((e) => e.timestamp === hour && e.event_name === meter && e.payload.stripe_customer_id === 'cus_OrgA')
        .reduce((a, e) => a + Number(e.payload.value), 0);
    const run = async () => {
      const res = await report({ from: day, to: day });
      expect(res.status, res.text).toBe(200);
      return res.body;
    };
    const first = await compute(orgA, day, 11, 600);
    expect(await run()).toMatchObject({ sent: 1, corrections: 0 });
    // A late heartbeat: a record of that hour written after the hour was reported.
    const late = await compute(orgA, day, 11, 90);
    expect(await run()).toMatchObject({ sent: 1, corrections: 1, already_reported: 0 });
    expect(stripe.events.at(-1)).toMatchObject({
      event_name: meter,
      timestamp: hour,
      identifier: correctionIdentifier(orgA, meter, hour, BigInt(first)),
      payload: { stripe_customer_id: 'cus_OrgA', value: String(late) },
    });
    expect(taken()).toBe(first + late);
    expect(await run()).toMatchObject({ sent: 0, corrections: 0, already_reported: 1 });
    // Stripe failing on a correction: it stays claimed, and the next run sends it as it was, then the
    // record that came meanwhile as a correction of its own.
    const late2 = await compute(orgA, day, 11, 30);
    stripe.failNextStream(1);
    expect((await report({ from: day, to: day })).status).toBe(502);
    const late3 = await compute(orgA, day, 11, 7);
    expect(await run()).toMatchObject({ sent: 2, corrections: 2 });
    expect(taken()).toBe(first + late + late2 + late3);
    // Racing runs after another late record: Stripe takes the difference once.
    const late4 = await compute(orgA, day, 11, 3);
    const raced = await Promise.all(Array.from({ length: 6 }, () => report({ from: day, to: day })));
    expect(raced.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(taken()).toBe(first + late + late2 + late3 + late4);
    expect(await run()).toMatchObject({ sent: 0, already_reported: 1 });
    expect(stripe.refusals.filter((r) => !r.includes('session'))).toEqual([]);
  });

  it("a claimed correction sent again after Stripe's de-duplication window counts once: Stripe's sum of the hour decides", async () => {
    const orgC = await ops.stack.orgOf(await ops.stack.newUser('stripe-window'));
    const map = async (customer: string) =>
      expect(
        (
          await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgC}/billing`, {
            ...(await operator()),
            body: { stripe_customer_id: customer },
          })
        ).status,
      ).toBe(200);
    await map('cus_Window');
    const day = dayBefore(8);
    const meter = STRIPE_METERS.compute;
    const taken = (h: number, customer = 'cus_Window') =>
      stripe.events
        .filter((e) => e.timestamp === hourIso(day, h) && e.event_name === meter)
        .filter((e) => e.payload.stripe_customer_id === customer)
        .reduce((a, e) => a + Number(e.payload.value), 0);
    const run = async (status = 200) => {
      const res = await report({ from: day, to: day });
      expect(res.status, res.text).toBe(status);
      return res.body;
    };
    const summaries = () => stripe.requests.filter((r) => r.path.includes('/event_summaries')).length;
    // A day passes: the claims of these hours were made 25 hours ago, and Stripe forgot their identifiers.
    const aDayLater = async (...hours: number[]) => {
      const db = documentClient();
      for (const h of hours) {
        const { Items = [] } = await db.send(
          new QueryCommand({
            TableName: tableName('usage'),
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
            ExpressionAttributeValues: { ':pk': stripeKeys.marks(orgC), ':sk': `${hourIso(day, h)}#${meter}#+` },
          }),
        );
        expect(Items.length).toBeGreaterThan(0);
        for (const item of Items)
          await db.send(
            new UpdateCommand({
              TableName: tableName('usage'),
              Key: { pk: item.pk, sk: item.sk },
              UpdateExpression: 'SET claimedAt = :t',
              ExpressionAttributeValues: { ':t': new Date(Date.now() - 25 * 3_600_000).toISOString() },
            }),
          );
      }
      stripe.forgetIdentifiers();
    };

    const a = await compute(orgC, day, 5, 600);
    const b = await compute(orgC, day, 6, 600);
    expect(await run()).toMatchObject({ sent: 2, corrections: 0 });
    // Hour 5: its correction taken by Stripe, but the answer lost: claimed, never confirmed.
    const lateA = await compute(orgC, day, 5, 90);
    stripe.loseNextStreamAnswer(1);
    await run(502);
    expect(taken(5)).toBe(a + lateA);
    // Hour 6: its correction refused (and hour 5's sent again with it, refused too).
    const lateB = await compute(orgC, day, 6, 45);
    stripe.failNextStream(1);
    await run(502);
    expect(taken(6)).toBe(b);
    // A day later: Stripe's sums say hour 5's was taken (confirmed, not sent) and hour 6's not (sent, once).
    await aDayLater(5, 6);
    const before = summaries();
    expect(await run()).toMatchObject({ sent: 1, corrections: 1, unresolved_corrections: 0 });
    expect(summaries() - before).toBe(2);
    expect(taken(5)).toBe(a + lateA);
    expect(taken(6)).toBe(b + lateB);
    expect(await run()).toMatchObject({ sent: 0, corrections: 0, unresolved_corrections: 0 });
    expect(summaries() - before).toBe(2);

    // Hour 7: its correction's answer lost, then the organization remapped to another customer: Stripe's sum for
    // that customer accounts for nothing, so nothing is sent (the operator is told), never twice.
    const c = await compute(orgC, day, 7, 600);
    expect(await run()).toMatchObject({ sent: 1 });
    const lateC = await compute(orgC, day, 7, 30);
    stripe.loseNextStreamAnswer(1);
    await run(502);
    await map('cus_Other');
    await aDayLater(7);
    expect(await run()).toMatchObject({ sent: 0, unresolved_corrections: 1 });
    expect(taken(7)).toBe(c + lateC);
    expect(taken(7, 'cus_Other')).toBe(0);
    expect(stripe.refusals.filter((r) => !r.includes('session'))).toEqual([]);
  });

  it("refuses a period older than Stripe's 35 days with 422 naming from; bad periods 422; operators only", async () => {
    const old = await report({ from: dayBefore(36), to: dayBefore(30) });
    expect(old.status).toBe(422);
    expect(old.body.detail[0].loc).toEqual(['body', 'from']);
    expect(old.body.detail[0].msg).toMatch(/35 days/);
    expect((await report({ from: dayBefore(35), to: dayBefore(34) })).status).toBe(200);
    expect((await report({ from: d1, to: d2 })).status).toBe(422);
    expect((await report({ from: d1, to: '2999-01-01' })).status).toBe(422);
    expect((await report({ from: 'yesterday', to: d1 })).status).toBe(422);
    const key = await ops.stack.newUser('stripe-mallory');
    const res = await ops.stack.call('POST', '/api/v1/admin/billing/stripe-reports', {
      key,
      body: { from: d2, to: d1 },
    });
    expect(res.status).toBe(403);
  });

  it('Stripe failing marks nothing (the next run sends it); an expired session is replaced', async () => {
    const day = dayBefore(3);
    const micro = await compute(orgA, day, 9, 120);
    stripe.failNextStream(1);
    const failed = await report({ from: day, to: day });
    expect(failed.status, failed.text).toBe(502);
    expect(failed.body.detail).toMatch(/Stripe answered 500/);
    expect(failed.text).not.toContain(stripe.secretKey);
    stripe.expireSessions();
    const ok = await report({ from: day, to: day });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.sent).toBe(1);
    expect(stripe.events.at(-1)).toMatchObject({ timestamp: hourIso(day, 9), payload: { value: String(micro) } });
    expect(stripe.refusals).toEqual(['expired or unknown session']);
  });

  it('sends at most 100 events a request', async () => {
    const day = dayBefore(5);
    const day2 = dayBefore(6);
    const hours = [...Array(24).keys()];
    // Written concurrently (each record is its own key; the totals' ADDs commute).
    await Promise.all(
      [day, day2].flatMap((d) => hours.flatMap((h) => [compute(orgA, d, h, 10), llm(orgA, d, h, 10, 10)])),
    );
    const start = stripe.requests.length;
    const res = await report({ from: day2, to: day });
    expect(res.body.sent).toBe(96);
    const streams = stripe.requests.slice(start).filter((r) => r.path.endsWith('meter_event_stream'));
    expect(streams).toHaveLength(1);
    expect(streams.map((r) => r.events)).toEqual([96]);
    // A third day, and the first two days' marks lost: 144 events, two requests of 100 and 44; the 96 sent
    // before are de-duplicated by their identifiers.
    const day3 = dayBefore(7);
    await Promise.all(hours.flatMap((h) => [compute(orgA, day3, h, 10), llm(orgA, day3, h, 10, 10)]));
    await Promise.all(
      [day, day2].flatMap((d) =>
        hours.flatMap((h) =>
          Object.values(STRIPE_METERS).map((meter) =>
            documentClient().send(
              new DeleteCommand({
                TableName: tableName('usage'),
                Key: { pk: stripeKeys.marks(orgA), sk: `${hourIso(d, h)}#${meter}` },
              }),
            ),
          ),
        ),
      ),
    );
    const mid = stripe.requests.length;
    const dupes = stripe.duplicates.length;
    const big = await report({ from: day3, to: day });
    expect(big.body.sent).toBe(144);
    const sizes = stripe.requests
      .slice(mid)
      .filter((r) => r.path.endsWith('meter_event_stream'))
      .map((r) => r.events);
    expect(sizes).toEqual([100, 44]);
    expect(stripe.duplicates.length - dupes).toBe(96);
    expect(stripe.refusals.filter((r) => !r.includes('session'))).toEqual([]);
  });
});
