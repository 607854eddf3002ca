import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSV_COLUMNS } from '#shared/billing/focus.ts';
import { usageKeys } from '#shared/usage/dynamo-usage-store.ts';
import { computeCharge, DEFAULT_PRICES_CONFIG, parsePrices } from '#shared/usage/prices.ts';
import type { ComputeRecord } from '#shared/usage/usage-store.ts';
import { csvRecords, microOf, parseCsv } from '#test/helpers/csv.ts';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { stripeKeys } from '#shared/billing/dynamo-stripe-store.ts';
import { STRIPE_API_VERSION, STRIPE_METERS } from '#shared/billing/stripe.ts';
import { startStripeFake, type StripeFake } from '#test/helpers/stripe-fake.ts';
import { OPERATOR_KEY } from '#test/tier/aws.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { ACCOUNT, functionsOf, ofType, REGION, withoutAction, type Template } from '#test/tier/template.ts';

/**
 * The billing export as deployed: the daily EventBridge rule fires the export function's bundle (the
 * template's environment, its role) which reads the ledger's records from the usage table and puts the FOCUS
 * file in the export bucket (the fake S3 checks s3:PutObject against the role's policy); the operators' route
 * through API Gateway and the authorizer does the same for a period. A mutation without the PutObject grant
 * is caught. Records are put straight into the usage table, shaped as the heartbeat's store writes them.
 */

/** Sign-up open (the stack's default is invite-only), so a pool member of the `operators` group gets an account. */
const openSignUp = (t: Template) => {
  for (const [, r] of ofType(t, 'AWS::Lambda::Function')) {
    const vars = r.Properties?.Environment?.Variables;
    if (vars && 'SIGNUP_MODE' in vars) vars.SIGNUP_MODE = 'open';
  }
};
const DAY = '2025-03-10';
const price = parsePrices(DEFAULT_PRICES_CONFIG, 't').compute('eu-west-1', false);
/** The Stripe key's SSM parameter, as an operator names it in the CDK context `stripe` (`apiKeyArn`). */
const STRIPE_KEY_ARN = `arn:aws:ssm:${REGION}:${ACCOUNT}:parameter/acs/stripe-secret-key`;

/**
 * What the CDK context `stripe` gives the operators' Stripe report (`reportStripeUsage`): the key's ARN and
 * Stripe's base URLs (here the loopback fake) in its environment, and its `stripe` grant on that ARN (the stack
 * synthesized without the context grants a parameter that exists nowhere). The daily export keeps none.
 */
function configureStripe(t: Template, base: string): void {
  const fn = '/Fn-reportStripeUsage/';
  let vars = 0;
  let grants = 0;
  for (const [, r] of ofType(t, 'AWS::Lambda::Function')) {
    if (!String(r.Metadata?.['aws:cdk:path']).includes(fn)) continue;
    const v = r.Properties.Environment.Variables;
    expect(v.STRIPE_API_KEY_ARN).toBe('');
    Object.assign(v, { STRIPE_API_KEY_ARN: STRIPE_KEY_ARN, STRIPE_API_BASE: base, STRIPE_METER_EVENTS_BASE: base });
    vars++;
  }
  for (const [, p] of ofType(t, 'AWS::IAM::Policy')) {
    if (!String(p.Metadata?.['aws:cdk:path']).includes(fn)) continue;
    for (const st of p.Properties.PolicyDocument.Statement)
      if ([st.Action].flat().includes('ssm:GetParameter')) {
        st.Resource = STRIPE_KEY_ARN;
        grants++;
      }
  }
  expect([vars, grants]).toEqual([1, 1]);
}

const operatorDb = (tier: TierStack) =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: REGION,
      endpoint: tier.aws.url,
      credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'operator-secret' },
    }),
  );

async function putRecords(tier: TierStack, records: { orgId: string; userId: string; seconds: number }[], day = DAY) {
  const db = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: REGION,
      endpoint: tier.aws.url,
      credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'operator-secret' },
    }),
  );
  let micro = 0n;
  let i = 0;
  for (const { orgId, userId, seconds } of records) {
    const c = computeCharge(seconds, 1024, 2048, price);
    const from = `${day}T08:00:${String(i).padStart(2, '0')}.000Z`;
    const r: ComputeRecord = {
      sandboxId: `sbx-tier-${day}-${i++}`,
      generation: 1,
      orgId,
      userId,
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
    };
    const pk = usageKeys.compute(r.sandboxId, r.generation);
    await db.send(
      new PutCommand({
        TableName: tier.outputs.UsageTableName!,
        Item: { pk, sk: r.from, kind: 'compute', recordKey: usageKeys.recordKey(orgId, r.from, pk), ...r },
      }),
    );
    micro += BigInt(c.costMicroUsd);
  }
  db.destroy();
  return micro;
}

const dailyRule = (tier: TierStack) => {
  const rules = tier.bus.ruleSchedules.filter((r) => r.expression === 'cron(15 0 * * ? *)');
  expect(rules).toHaveLength(1);
  return rules[0]!.id;
};

describe('the billing export in the tier', () => {
  let tier: TierStack;
  let stripe: StripeFake;
  beforeAll(async () => {
    stripe = await startStripeFake({ meters: Object.values(STRIPE_METERS), apiVersion: STRIPE_API_VERSION });
    tier = await startTier({
      mutate: (t) => {
        openSignUp(t);
        configureStripe(t, stripe.url);
      },
    });
  }, 120_000);
  afterAll(async () => {
    await tier?.stop();
    await stripe?.close();
  });

  it("the daily rule runs the export bundle, which writes the previous UTC day's file to the bucket under its role", async () => {
    const micro = await putRecords(tier, [
      { orgId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa', userId: 'alice', seconds: 3600 },
      { orgId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa', userId: 'bob', seconds: 61 },
      { orgId: 'org_bbbbbbbbbbbbbbbbbbbbbbbb', userId: 'carol', seconds: 7 },
    ]);
    const [delivery] = await tier.bus.runRule(dailyRule(tier), new Date('2025-03-11T00:15:03Z'));
    expect(
      delivery!.result.ok,
      `${JSON.stringify(delivery!.result.error)}\n${tier.lambda.logsOf(delivery!.target).slice(-3000)}`,
    ).toBe(true);
    const key = `focus-1.2/${DAY}_${DAY}.csv`;
    expect(delivery!.result.result).toMatchObject({ from: DAY, to: DAY, key, records: 3 });
    expect((delivery!.result.result as { location: string }).location).toMatch(/^s3:\/\/.+\/focus-1\.2\//);
    const body = tier.aws.objectBody(key)?.toString('utf8');
    expect(body).toBeDefined();
    const rows = csvRecords(body!);
    expect(rows.reduce((a, r) => a + microOf(r.BilledCost!), 0n)).toBe(micro);
    expect(new Set(rows.map((r) => r.SubAccountId))).toEqual(new Set(['alice', 'bob', 'carol']));
    // Unknown organizations (records only) have no name: null, not an error.
    expect(rows.every((r) => r.BillingAccountName === null && r.RegionId === price.region)).toBe(true);
    expect(tier.aws.denials).toEqual([]);
  });

  it('the operators route writes a period through API Gateway and the authorizer; a user is refused', async () => {
    const idp = tier.cognito;
    const access = (sub: string, groups: string[]) =>
      idp.sign({ sub, token_use: 'access', client_id: idp.clientId, username: sub, 'cognito:groups': groups });
    const bearer = (token: string) => ({ key: null, headers: { authorization: `Bearer ${token}` } });
    const body = { from: '2025-03-09', to: DAY };
    const refused = await tier.call('POST', '/api/v1/admin/billing/exports', {
      ...bearer(await access('pool-user', [])),
      body,
    });
    expect(refused.status, refused.text).toBe(403);
    const res = await tier.call('POST', '/api/v1/admin/billing/exports', {
      ...bearer(await access('pool-op', ['operators'])),
      body,
    });
    expect(res.status, `${res.text}\n${tier.explain()}`).toBe(200);
    expect(res.body).toMatchObject({ key: 'focus-1.2/2025-03-09_2025-03-10.csv', records: 3 });
    const rows = parseCsv(tier.aws.objectBody(res.body.key)!.toString('utf8'));
    expect(rows[0]).toEqual([...CSV_COLUMNS]);
    expect(rows.length).toBeGreaterThan(1);
    expect(tier.aws.denials).toEqual([]);
  });

  // This tier (open sign-up, a Cognito operator) also runs, as deployed, the sign-in routes that people and operators call rarely.
  it("the operators' lists, a person's export and deletion, and the nightly purge run through their bundles under their roles", async () => {
    const idp = tier.cognito;
    const access = (sub: string, groups: string[]) =>
      idp.sign({ sub, token_use: 'access', client_id: idp.clientId, username: sub, 'cognito:groups': groups });
    const bearer = (token: string) => ({ key: null, headers: { authorization: `Bearer ${token}` } });
    const person = bearer(await access('pool-leaver', []));
    const me = await tier.call('GET', '/api/v1/users/me', person);
    expect(me.status, me.text).toBe(200);
    const op = bearer(await access('pool-op', ['operators']));
    for (const path of [
      '/api/v1/admin/users?limit=5',
      '/api/v1/admin/users?status=suspended',
      `/api/v1/admin/users?org_id=${me.body.org_id}&status=active`,
      '/api/v1/admin/orgs',
      '/api/v1/admin/orgs?status=closed',
    ]) {
      const res = await tier.call('GET', path, op);
      expect(res.status, `${path}: ${res.text}\n${tier.explain()}`).toBe(200);
    }
    expect((await tier.call('GET', '/api/v1/admin/users', person)).status).toBe(403);
    const exported = await tier.call('GET', '/api/v1/users/me/export', person);
    expect(exported.status, `${exported.text}\n${tier.explain()}`).toBe(200);
    expect(exported.body.account.user_id).toBe(me.body.id);
    const deleted = await tier.call('DELETE', '/api/v1/users/me', { ...person, body: { confirm: me.body.id } });
    expect(deleted.status, `${deleted.text}\n${tier.explain()}`).toBe(202);
    // (Refused by the authorizer's container once its 30 s account cache lets go, as a suspension: not asserted here.)
    // The usage reconcile's schedule, then its purge of the deleted account's data, under its role.
    const run = await tier.bus.runSchedule('UsageReconcile');
    expect(run.result.ok, JSON.stringify(run.result.error)).toBe(true);
    expect((run.result.result as { accountsPurge: { purged: number } }).accountsPurge.purged).toBe(1);
    expect(tier.aws.denials).toEqual([]);
  });

  it("the operators' Stripe report reads its key from SSM by the template's ARN under its role, and sends the day's usage to Stripe", async () => {
    const day = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
    const orgId = 'org_cccccccccccccccccccccccc';
    const micro = await putRecords(tier, [{ orgId, userId: 'dave', seconds: 600 }], day);
    const db = operatorDb(tier);
    await db.send(
      new PutCommand({
        TableName: tier.outputs.UsageTableName!,
        Item: { pk: stripeKeys.customer(orgId), sk: 'customer', customerId: 'cus_Tier' },
      }),
    );
    db.destroy();
    tier.aws.keyValues.set(STRIPE_KEY_ARN, stripe.secretKey);
    const token = await tier.cognito.sign({
      sub: 'pool-op',
      token_use: 'access',
      client_id: tier.cognito.clientId,
      username: 'pool-op',
      'cognito:groups': ['operators'],
    });
    const res = await tier.call('POST', '/api/v1/admin/billing/stripe-reports', {
      key: null,
      headers: { authorization: `Bearer ${token}` },
      body: { from: day, to: day },
    });
    expect(res.status, `${res.text}\n${tier.explain()}`).toBe(200);
    expect(res.body).toMatchObject({ sent: 1, corrections: 0, skipped_orgs: [] });
    expect(stripe.events).toEqual([
      expect.objectContaining({
        event_name: STRIPE_METERS.compute,
        payload: { stripe_customer_id: 'cus_Tier', value: String(micro) },
      }),
    ]);
    // The key from SSM opened the session; the stream got the session's token, never the key.
    const session = stripe.requests.filter((r) => r.path.endsWith('meter_event_session'));
    expect(session.map((r) => r.auth)).toEqual([`Bearer ${stripe.secretKey}`]);
    expect(stripe.refusals).toEqual([]);
    expect(tier.aws.denials).toEqual([]);
    // Its role reads that parameter and no other; the daily export's role reads none (Stripe not configured there).
    const fns = functionsOf(tier.template, tier.resolved);
    const roleOf = (name: string) => fns.find((f) => f.name === name)!.roleArn;
    const ssmAs = (name: string) =>
      new SSMClient({
        region: REGION,
        endpoint: tier.aws.url,
        credentials: { accessKeyId: tier.aws.accessKeyFor(roleOf(name)), secretAccessKey: 'x' },
      });
    tier.aws.keyValues.set(`${STRIPE_KEY_ARN}-other`, 'another secret');
    await expect(
      ssmAs('reportStripeUsage').send(
        new GetParameterCommand({ Name: `${STRIPE_KEY_ARN}-other`, WithDecryption: true }),
      ),
    ).rejects.toThrow(/not authorized|AccessDenied/);
    await expect(
      ssmAs('billingExport').send(new GetParameterCommand({ Name: STRIPE_KEY_ARN, WithDecryption: true })),
    ).rejects.toThrow(/not authorized|AccessDenied/);
    expect(tier.aws.denials.map((d) => d.operation)).toEqual(['ssm:GetParameter', 'ssm:GetParameter']);
  });
});

describe('mutation: s3:PutObject removed from the export function', () => {
  let tier: TierStack;
  beforeAll(async () => {
    tier = await startTier({ mutate: (t) => expect(withoutAction(t, 's3:PutObject', 'billingExport')).toBe(1) });
  }, 120_000);
  afterAll(() => tier?.stop());

  it('the daily run is denied writing, and nothing is in the bucket', async () => {
    await putRecords(tier, [{ orgId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa', userId: 'alice', seconds: 60 }]);
    const [delivery] = await tier.bus.runRule(dailyRule(tier), new Date('2025-03-11T00:15:00Z'));
    expect(delivery!.result.ok).toBe(false);
    expect(tier.aws.denials.map((d) => d.request.action)).toContain('s3:PutObject');
    expect(tier.aws.objectKeys('focus-1.2/')).toEqual([]);
  });
});
