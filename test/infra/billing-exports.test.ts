import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { capabilityGrants, type GrantTargets } from '#infra/iam.ts';
import { buildApp } from '#infra/stack.ts';
import { flattenNested, type Template as TierTemplate } from '#test/tier/template.ts';

/**
 * The billing export on AWS (docs/billing.md): a private, encrypted, retained bucket; the daily EventBridge
 * schedule on the export function with its dead-letter queue; and `s3:PutObject` on the bucket's focus-1.2/
 * prefix for exactly the two functions that write (the schedule's and the operators' route), nothing else on
 * that bucket for anyone. Synthesised without bundling (the tier runs the bundle: test/tier/billing-export.test.ts).
 */
const cdkContext = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')).context as Record<
  string,
  unknown
>;
type Json = Record<string, any>;

const outdirs: string[] = [];
afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});
/** The app synthesised without bundling, and its resources with the nested route stacks' merged in (as the tier reads them). */
function synthAll(context: Record<string, unknown> = {}) {
  const outdir = mkdtempSync(join(tmpdir(), 'acs-cdk-billing-'));
  outdirs.push(outdir);
  const app = new App({
    context: { ...cdkContext, ...context, 'aws:cdk:bundling-stacks': [], 'aws:cdk:enable-asset-metadata': true },
    outdir,
  });
  const built = buildApp(app);
  const assembly = app.synth();
  const resources = flattenNested(assembly.getStackByName(built.stackName).template as TierTemplate, (file) =>
    JSON.parse(readFileSync(join(outdir, file), 'utf8')),
  ).Resources as Record<string, Json>;
  return { stack: built, main: Template.fromStack(built).toJSON().Resources as Record<string, Json>, all: resources };
}
const STRIPE_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:acs/stripe-AbCdEf';
// One synthesis (two cost 20 s more on a shared machine): with the Stripe key configured; without it, the grant's
// inert ARN is checked on the grant itself below.
const { stack, main, all } = synthAll({ stripe: JSON.stringify({ apiKeyArn: STRIPE_ARN }) });
const routeStackOf = (id: string) => Stack.of(stack.functions.get(id)!.fn);
const ofType = (r: Record<string, Json>, type: string) => Object.entries(r).filter(([, v]) => v.Type === type);
const logicalId = (s: Stack, c: { node: { defaultChild?: unknown } }) => s.getLogicalId(c.node.defaultChild as never);

const bucketId = logicalId(stack, {
  node: { defaultChild: stack.node.findChild('BillingExports').node.findChild('Bucket').node.defaultChild },
});

describe('the billing export on AWS', () => {
  it('keeps the files in a private, encrypted, TLS-only bucket that outlives the stack', () => {
    const bucket = main[bucketId]!;
    expect(bucket.Type).toBe('AWS::S3::Bucket');
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(
      bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault,
    ).toEqual({ SSEAlgorithm: 'AES256' });
    expect(bucket.Properties.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    const policy = ofType(main, 'AWS::S3::BucketPolicy').find(([, p]) => p.Properties.Bucket.Ref === bucketId);
    expect(JSON.stringify(policy?.[1].Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
  });

  it('runs the export function every day at 00:15 UTC, failures to the dead-letter queue', () => {
    const fn = stack.functions.get('billingExport')!;
    const fnId = logicalId(stack, fn.fn.fn);
    const rules = ofType(main, 'AWS::Events::Rule').filter(([, r]) => r.Properties.ScheduleExpression);
    const daily = rules.filter(([, r]) => r.Properties.Targets.some((t: Json) => t.Arn['Fn::GetAtt']?.[0] === fnId));
    expect(daily).toHaveLength(1);
    const [ruleId, rule] = daily[0]!;
    expect(rule.Properties.ScheduleExpression).toBe('cron(15 0 * * ? *)');
    expect(rule.Properties.State).toBe('ENABLED');
    expect(rule.Properties.Targets[0].DeadLetterConfig.Arn['Fn::GetAtt'][0]).toBe(logicalId(stack, stack.failureQueue));
    // EventBridge may invoke it: for this rule only.
    const perms = ofType(main, 'AWS::Lambda::Permission').filter(
      ([, p]) => p.Properties.FunctionName['Fn::GetAtt']?.[0] === fnId,
    );
    expect(perms.map(([, p]) => [p.Properties.Principal, p.Properties.SourceArn['Fn::GetAtt'][0]])).toEqual([
      ['events.amazonaws.com', ruleId],
    ]);
    expect(main[fnId]!.Properties.Timeout).toBe(300);
  });

  it('lets exactly the two exporting functions put objects under focus-1.2/, and nothing else touch the bucket', () => {
    const writers = ['billingExport', 'exportBilling'].map((id) => {
      const fn = stack.functions.get(id)!;
      const s = routeStackOf(id);
      return { id, role: logicalId(s, fn.fn.role), stack: s };
    });
    const onBucket = Object.values(all)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((p) =>
        p.Properties.PolicyDocument.Statement.filter((st: Json) => JSON.stringify(st.Resource).includes(bucketId)).map(
          (st: Json) => ({ roles: p.Properties.Roles.map((r: Json) => r.Ref), st }),
        ),
      );
    expect(onBucket).toHaveLength(2);
    for (const { roles, st } of onBucket) {
      expect(st.Action).toBe('s3:PutObject');
      expect(st.Effect).toBe('Allow');
      expect(JSON.stringify(st.Resource)).toMatch(/"\/focus-1\.2\/\*"/);
      expect(roles).toHaveLength(1);
    }
    // The route function lives in a nested stack: there the bucket is a parameter the parent passes.
    const roleIds = onBucket.map((x) => x.roles[0]).sort();
    expect(roleIds).toEqual(writers.map((w) => w.role).sort());
    for (const w of writers) {
      const env = all[logicalId(w.stack, stack.functions.get(w.id)!.fn.fn)]!.Properties.Environment.Variables;
      expect(Object.keys(env), w.id).toContain('BILLING_EXPORT_BUCKET');
    }
  });
});

describe('the Stripe key on AWS', () => {
  const keyReads = (resources: Record<string, Json>) =>
    Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((p) =>
        p.Properties.PolicyDocument.Statement.filter((st: Json) => [st.Action].flat().includes('ssm:GetParameter')).map(
          (st: Json) => ({ role: p.Properties.Roles[0].Ref as string, resource: st.Resource }),
        ),
      );
  const stripeRoles = ['billingExport', 'reportStripeUsage'].map((id) =>
    logicalId(routeStackOf(id), stack.functions.get(id)!.fn.role),
  );

  it('with the context key: exactly the key ARN, for the functions that call Stripe only, given by ARN', () => {
    const reads = keyReads(all).filter((r) => JSON.stringify(r.resource).includes('stripe'));
    expect(reads.map((r) => r.resource)).toEqual([STRIPE_ARN, STRIPE_ARN]);
    expect(reads.map((r) => r.role).sort()).toEqual([...stripeRoles].sort());
    for (const id of ['billingExport', 'reportStripeUsage']) {
      const env = all[logicalId(routeStackOf(id), stack.functions.get(id)!.fn.fn)]!.Properties.Environment.Variables;
      expect(env.STRIPE_API_KEY_ARN, id).toBe(STRIPE_ARN);
    }
  });

  it('without it: a parameter that exists nowhere (the grant is inert); a value that is not an ARN stops the synth', () => {
    const bare = new Stack(new App(), 'Bare', { env: { account: '123456789012', region: 'eu-west-1' } });
    const [grant] = capabilityGrants.stripe;
    const resources = JSON.stringify(bare.resolve(grant!.resources({} as GrantTargets, bare)));
    expect(resources).toContain(':ssm:eu-west-1:123456789012:parameter/acs/stripe-not-configured');
    expect(grant!.actions).toEqual(['ssm:GetParameter', 'secretsmanager:GetSecretValue']);
    expect(() =>
      buildApp(new App({ context: { ...cdkContext, stripe: JSON.stringify({ apiKeyArn: 'sk_live_123' }) } })),
    ).toThrow(/stripe/);
  });
});
