import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createKey, settingsRoundTrip, startSandbox, TierFailure, until } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { ofType, withoutAction, type Template } from '#test/tier/template.ts';

/**
 * The tier can fail: on copies of the template with one thing removed, the flows that need it
 * must report it. Then API Gateway's own answers, on copies with the API's settings changed.
 */

const fn = (t: Template, name: string) => {
  const found = ofType(t, 'AWS::Lambda::Function').find(([, r]) =>
    r.Metadata?.['aws:cdk:path']?.includes(`/Fn-${name}/`),
  );
  if (!found) throw new Error(`No function ${name}`);
  return found[1];
};

describe('mutation: SECRETS_KEY_ID removed from the saveSettings function', () => {
  let tier: TierStack;
  beforeAll(async () => {
    tier = await startTier({
      mutate: (t) => {
        const vars = fn(t, 'saveSettings').Properties.Environment.Variables;
        expect(vars).toHaveProperty('SECRETS_KEY_ID');
        delete vars.SECRETS_KEY_ID;
      },
    });
  }, 120_000);
  afterAll(() => tier?.stop());

  it('the settings flow reports the failure: saving answers 500 and the function names the missing variable', async () => {
    const key = await createKey(tier, 'mutant');
    const failure = await settingsRoundTrip(tier, key, 'http://127.0.0.1:9/v1').then(
      () => undefined,
      (err) => err,
    );
    expect(failure).toBeInstanceOf(TierFailure);
    expect(failure.message).toMatch(/^POST \/api\/settings: HTTP 500/);
    expect(failure.message).toContain('SECRETS_KEY_ID (the KMS key that seals secrets) is not set');
  }, 60_000);
});

describe('mutation: the ecs:TagResource grants removed', () => {
  let tier: TierStack;
  beforeAll(async () => {
    tier = await startTier({ mutate: (t) => expect(withoutAction(t, 'ecs:TagResource')).toBeGreaterThan(0) });
  }, 120_000);
  afterAll(() => tier?.stop());

  it('a sandbox start reports the failure: ECS denies tagging on create, the sandbox goes to ERROR', async () => {
    const key = await createKey(tier, 'mutant');
    await expect(startSandbox(tier, key)).rejects.toThrow(/sandbox \S+ start: .*"status":"ERROR".*ecs:TagResource/);
    expect(
      tier.aws.denials.map((d) => [d.operation, d.request.action, d.request.context?.['ecs:CreateAction']]),
    ).toContainEqual(['ecs:RunTask', 'ecs:TagResource', 'RunTask']);
  }, 90_000);
});

describe('mutation: s3:PutObject removed from the roles that sign snapshot uploads', () => {
  let tier: TierStack;
  beforeAll(async () => {
    tier = await startTier({ mutate: (t) => expect(withoutAction(t, 's3:PutObject')).toBeGreaterThan(0) });
  }, 120_000);
  afterAll(() => tier?.stop());

  it("a pause's snapshot is refused by S3 as the signing role's policy says, and nothing becomes current", async () => {
    const key = await createKey(tier, 'mutant');
    const sb = await startSandbox(tier, key);
    const task = [...tier.aws.tasks.values()].find((t) => t.startedBy === sb.id)!;
    writeFileSync(join(tier.aws.taskPath(task.taskArn, '/workspace'), 'lost.txt'), 'not saved');
    expect((await tier.call('POST', `/api/v1/sandboxes/${sb.id}/pause`, { key })).status).toBe(200);
    await until(
      tier,
      'task stopped',
      async () => tier.aws.tasks.get(task.taskArn)!.lastStatus,
      (s) => s === 'STOPPED',
    );
    await tier.bus.settle();
    const upload = tier.lambda.byName('sandboxSnapshotUpload').roleArn;
    const denied = tier.aws.denials.filter((d) => d.request.action === 's3:PutObject');
    expect(denied.length).toBeGreaterThan(0);
    for (const d of denied) {
      expect(d.principal).toBe(upload);
      expect(d.request.resource).toMatch(
        new RegExp(`^arn:aws:s3:::[a-z0-9-]+/sandboxes/${sb.id}/\\d{13}-[0-9a-f]{16}\\.tar\\.gz$`),
      );
    }
    expect(tier.aws.objectKeys(`sandboxes/${sb.id}/`)).toEqual([]);
  }, 90_000);
});

describe("API Gateway's own answers, from the template's settings", () => {
  let tier: TierStack;
  let key: string;
  beforeAll(async () => {
    tier = await startTier({
      mutate: (t) => {
        // GET /health loses its invoke permission; the authorizer gets an identity source and a cache;
        // the ECS rule's target loses its permission; the schedule's role loses its policy.
        const permissions = ofType(t, 'AWS::Lambda::Permission');
        const health = permissions.find(([id]) => /health/i.test(id) && !/Default/.test(id))!;
        delete t.Resources[health[0]];
        // The ECS rule's (the billing export's rule has a permission of its own, by the same principal).
        const events = permissions.find(
          ([, r]) =>
            r.Properties.Principal === 'events.amazonaws.com' &&
            /ecsEvents/i.test(JSON.stringify(r.Properties.FunctionName)),
        )!;
        delete t.Resources[events[0]];
        const [, authorizer] = ofType(t, 'AWS::ApiGatewayV2::Authorizer')[0]!;
        authorizer.Properties.IdentitySource = ['$request.header.X-Session-API-Key'];
        authorizer.Properties.AuthorizerResultTtlInSeconds = 300;
        const sweeperSchedule = ofType(t, 'AWS::Scheduler::Schedule').find(([id]) => id.startsWith('SweeperSchedule'))!;
        const scheduleRole = sweeperSchedule[1].Properties.Target.RoleArn['Fn::GetAtt'][0];
        for (const [id, p] of ofType(t, 'AWS::IAM::Policy'))
          if (JSON.stringify(p.Properties.Roles).includes(scheduleRole)) delete t.Resources[id];
      },
    });
    key = await createKey(tier, 'gateway');
  }, 120_000);
  afterAll(() => tier?.stop());

  it('500 when API Gateway may not invoke the function (no AWS::Lambda::Permission)', async () => {
    const res = await tier.call('GET', '/health');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ message: 'Internal Server Error' });
    expect(tier.api.records.at(-1)!.error).toMatch(/AccessDeniedException/);
  });

  it('401 from API Gateway itself when the identity source is missing; cached decisions by identity for the TTL', async () => {
    const missing = await tier.call('GET', '/api/v1/sandbox-specs/search');
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ message: 'Unauthorized' });
    expect((await tier.call('GET', '/api/v1/sandbox-specs/search', { key })).status).toBe(200);
    // Revoked, but the cached "allowed" answer stands for the TTL: what a cache setting means on AWS.
    await tier.keys(['revoke', key.split('_')[1]!]);
    expect((await tier.call('GET', '/api/v1/sandbox-specs/search', { key })).status).toBe(200);
  });

  it('an ECS event is not delivered without the function permission; the schedule fails without its role policy', async () => {
    tier.bus.put('ECS Task State Change', 'aws.ecs', {
      clusterArn: tier.outputs.ClusterArn,
      lastStatus: 'STOPPED',
      taskArn: 'x',
    });
    await tier.bus.settle();
    expect(tier.bus.failures.at(-1)!.result.error!.errorMessage).toMatch(/no AWS::Lambda::Permission/);
    const run = await tier.bus.runSchedule('SweeperSchedule');
    expect(run.result.ok).toBe(false);
    expect(run.result.error!.errorMessage).toMatch(/may not invoke .*implicit deny/);
  });

  it('route precedence: a literal segment beats a parameter, and unmatched paths go to $default', () => {
    expect(tier.api.match('GET', '/api/v1/sandboxes/search')!.route.key).toBe('GET /api/v1/sandboxes/search');
    expect(tier.api.match('POST', '/api/v1/sandboxes/abc/pause')).toMatchObject({
      route: { key: 'POST /api/v1/sandboxes/{sandbox_id}/pause' },
      params: { sandbox_id: 'abc' },
    });
    expect(tier.api.match('PATCH', '/api/v1/sandboxes/abc/pause')!.route.key).toBe('$default');
    expect(tier.api.match('GET', '/api/v1/sandboxes/abc/pause/extra')!.route.key).toBe('$default');
  });
});
