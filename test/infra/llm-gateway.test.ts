import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '#infra/config.ts';
import { buildApp } from '#infra/stack.ts';

/**
 * The LLM gateway's AWS declaration (docs/platform-llms.md, design (a)): a function URL in response
 * streaming mode with IAM auth behind CloudFront `/llm/*` with origin access control and a 60 s read
 * timeout, invoke permissions for that distribution only, and a role that reads exactly the keys' ARNs.
 * Synthesised without bundling (the tier runs the bundle: not yet, see the docs).
 */
const cdkContext = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')).context as Record<
  string,
  unknown
>;
const KEY_ARN = 'arn:aws:ssm:eu-west-1:123456789012:parameter/acs/anthropic-key';
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:acs/openai-key-AbCdEf';
const models = [
  {
    model: 'platform/claude-sonnet',
    provider: 'anthropic',
    upstream_model: 'claude-sonnet-4-5',
    base_url: 'https://api.anthropic.com/v1',
    api_key_arn: KEY_ARN,
    usd_per_mtok: { input: 3, output: 15 },
    markup: 0.2,
    max_output_tokens: 8192,
  },
  {
    model: 'platform/gpt',
    provider: 'openai',
    upstream_model: 'gpt-4.1',
    base_url: 'https://api.openai.com/v1',
    api_key_arn: SECRET_ARN,
    usd_per_mtok: { input: 2, output: 8 },
    max_output_tokens: 8192,
  },
];

function synth(context: Record<string, unknown>) {
  const app = new App({ context: { ...cdkContext, ...context, 'aws:cdk:bundling-stacks': [] } });
  const stack = buildApp(app);
  // The cdk-nag packs and CloudFormation's validation run at synth: any unacknowledged finding throws.
  app.synth();
  return Template.fromStack(stack).toJSON().Resources as Record<string, any>;
}
const ofType = (r: Record<string, any>, type: string) => Object.entries(r).filter(([, v]) => v.Type === type);

describe('the LLM gateway on AWS', () => {
  const resources = synth({ platformLlms: JSON.stringify(models) });

  it('is a function URL in response-streaming mode that only IAM (CloudFront with OAC) may invoke', () => {
    const urls = ofType(resources, 'AWS::Lambda::Url');
    expect(urls).toHaveLength(1);
    expect(urls[0]![1].Properties).toEqual(
      expect.objectContaining({ AuthType: 'AWS_IAM', InvokeMode: 'RESPONSE_STREAM' }),
    );
    const [urlId, url] = urls[0]!;
    const fnId = url.Properties.TargetFunctionArn['Fn::GetAtt'][0];
    expect(resources[fnId].Properties.Timeout).toBe(900);
    // Both invoke permissions, to CloudFront, for this distribution only.
    const perms = ofType(resources, 'AWS::Lambda::Permission').filter(
      ([, p]) => p.Properties.FunctionName?.['Fn::GetAtt']?.[0] === urlId,
    );
    expect(perms.map(([, p]) => p.Properties.Action).sort()).toEqual([
      'lambda:InvokeFunction',
      'lambda:InvokeFunctionUrl',
    ]);
    for (const [, p] of perms) {
      expect(p.Properties.Principal).toBe('cloudfront.amazonaws.com');
      expect(JSON.stringify(p.Properties.SourceArn)).toContain('distribution/');
    }
  });

  it('is served under /llm/* of the public host through origin access control, with a 60 s read timeout', () => {
    const [, dist] = ofType(resources, 'AWS::CloudFront::Distribution')[0]!;
    const config = dist.Properties.DistributionConfig;
    const behavior = config.CacheBehaviors.find((b: any) => b.PathPattern === '/llm/*');
    expect(behavior).toEqual(expect.objectContaining({ ViewerProtocolPolicy: 'https-only' }));
    expect(behavior.AllowedMethods).toContain('POST');
    const origin = config.Origins.find((o: any) => o.Id === behavior.TargetOriginId);
    expect(origin.OriginAccessControlId).toBeDefined();
    expect(origin.CustomOriginConfig.OriginReadTimeout).toBe(60);
    const [, oac] = ofType(resources, 'AWS::CloudFront::OriginAccessControl')[0]!;
    expect(oac.Properties.OriginAccessControlConfig).toEqual(
      expect.objectContaining({
        OriginAccessControlOriginType: 'lambda',
        SigningBehavior: 'always',
        SigningProtocol: 'sigv4',
      }),
    );
  });

  it("reads the upstream keys by ARN only: its role names exactly those ARNs, its environment never a key's value", () => {
    const [fnId] = ofType(resources, 'AWS::Lambda::Url')[0]![1].Properties.TargetFunctionArn['Fn::GetAtt'];
    const fn = resources[fnId];
    const roleId = fn.Properties.Role['Fn::GetAtt'][0];
    const statements = ofType(resources, 'AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: any) => r.Ref === roleId))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement);
    const keyReads = statements.filter((s: any) =>
      [s.Action].flat().some((a: string) => a === 'ssm:GetParameter' || a === 'secretsmanager:GetSecretValue'),
    );
    expect(keyReads).toHaveLength(1);
    expect([keyReads[0].Resource].flat().sort()).toEqual([KEY_ARN, SECRET_ARN].sort());
    // The only functions that may read a platform key: this one (the Stripe key's readers name only its ARN).
    const everyKeyRead = ofType(resources, 'AWS::IAM::Policy').filter(([, p]) =>
      [KEY_ARN, SECRET_ARN].some((arn) => JSON.stringify(p.Properties.PolicyDocument).includes(arn)),
    );
    expect(everyKeyRead.map(([, p]) => p.Properties.Roles[0].Ref)).toEqual([roleId]);
    const env = fn.Properties.Environment.Variables;
    expect(JSON.parse(env.PLATFORM_LLMS)).toEqual(models);
    expect(env.LLM_CONCURRENT_CALLS_PER_ORG).toBe('32');
  });

  it('is not deployed without platform models, and a model without api_key_arn is refused at synth', () => {
    expect(ofType(synth({}), 'AWS::Lambda::Url')).toEqual([]);
    const { api_key_arn: _, ...noArn } = models[0]!;
    const context: Record<string, unknown> = {
      ...cdkContext,
      platformLlms: JSON.stringify([{ ...noArn, api_key_env: 'X' }]),
    };
    expect(() => loadConfig((k) => context[k])).toThrow('needs api_key_arn on AWS');
  });
});
