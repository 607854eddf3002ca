import { DynamoDBClient, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, until } from '#test/tier/flows.ts';
import { estimatedStartDelays, OPERATOR_KEY, type EcsTask } from '#test/tier/aws.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { ofType, REGION, withoutAction, type Template } from '#test/tier/template.ts';

/*
 * The warm pool on the synthesized stack (test/tier/README.md): the default spec given a pool of 2
 * (as a deployer's `sandboxSpecs` context would), the fake ECS starting every task after delays drawn
 * from docs/performance.md's estimates at a tenth (PROVISIONING 0.5-1.5 s, PENDING 0.8-2 s). A cold
 * start pays them; a start that claims a standby does not. Then the standby credential, the drain,
 * and a mutation without the starting routes' grant to invoke the refill.
 */
const POOL = { size: 2, idleMinutes: 30, spot: false };
const COLD_MIN_MS = 1_300;

/** The default spec (the first of SANDBOX_SPECS, a JSON array, possibly joined with task definition ARNs) gets `warmPool`. */
function withPool(t: Template): void {
  let changed = 0;
  for (const [, r] of ofType(t, 'AWS::Lambda::Function')) {
    const vars = r.Properties?.Environment?.Variables;
    if (!vars?.SANDBOX_SPECS) continue;
    const add = (s: string) => s.replace(/^\[\{/, `[{"warmPool":${JSON.stringify(POOL)},`);
    const v = vars.SANDBOX_SPECS;
    if (typeof v === 'string') vars.SANDBOX_SPECS = add(v);
    else v['Fn::Join'][1][0] = add(v['Fn::Join'][1][0]);
    changed++;
  }
  expect(changed).toBeGreaterThan(0);
}

const operator = (tier: TierStack) =>
  new DynamoDBClient({
    region: REGION,
    endpoint: tier.aws.url,
    credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'operator-secret' },
  });
const standbys = async (tier: TierStack) =>
  (await operator(tier).send(new ScanCommand({ TableName: tier.outputs.PoolTableName!, ConsistentRead: true })))
    .Items!.filter((i) => i.id!.S!.startsWith('sb_'))
    .map((i) => ({
      id: i.id!.S!,
      status: i.status!.S!,
      ref: i.ref?.S,
    }));
const ready = (tier: TierStack, n: number) =>
  until(
    tier,
    `${n} ready standby(s)`,
    async () => (await standbys(tier)).filter((s) => s.status === 'ready'),
    (l) => l.length >= n,
    30_000,
  );
const envOf = (task: EcsTask) =>
  Object.fromEntries(
    (task.overrides?.containerOverrides?.[0]?.environment ?? []).map((e: { name: string; value: string }) => [
      e.name,
      e.value,
    ]),
  );

/** Start -> RUNNING as the API reports it, in ms, and the sandbox's phases. */
async function timedStart(tier: TierStack, key: string) {
  const began = Date.now();
  const res = await tier.call('POST', '/api/v1/sandboxes', { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const sb = await until(
    tier,
    `sandbox ${res.body.id} RUNNING`,
    async () => (await tier.call('GET', `/api/v1/sandboxes?id=${res.body.id}`, { key })).body?.[0],
    (s) => s?.status === 'RUNNING' || s?.status === 'ERROR',
    30_000,
  );
  expect(sb.status, tier.explain()).toBe('RUNNING');
  return { id: res.body.id as string, ms: Date.now() - began, phases: sb.start_phases };
}

describe('the warm pool, as deployed', () => {
  let tier: TierStack;
  let key: string;
  beforeAll(async () => {
    tier = await startTier({ mutate: withPool, startDelays: estimatedStartDelays(0.1) });
    key = await createKey(tier, 'pool-user');
  }, 120_000);
  afterAll(async () => {
    // The stops and refills the last steps set off finish before the functions' processes go.
    await tier?.bus.settle();
    await tier?.aws.settle();
    await tier?.stop();
  });

  it('a cold start pays the ECS delays; it opens the pool, whose standbys start and check in by their pool routes', async () => {
    const cold = await timedStart(tier, key);
    expect(cold.phases).toMatchObject({ warm: false, cold_reason: 'no standby was ready' });
    expect(cold.ms).toBeGreaterThanOrEqual(COLD_MIN_MS);
    // ECS's RUNNING event (the rule delivers it to the ECS events function) adds PROVISIONING and PENDING.
    const phases = await until(
      tier,
      'the cold start phases from the task event',
      async () => (await tier.call('GET', `/api/v1/sandboxes?id=${cold.id}`, { key })).body[0].start_phases,
      (p) => p.provisioning_ms !== undefined,
    );
    expect(phases.provisioning_ms).toBeGreaterThanOrEqual(500);
    expect(phases.pending_ms).toBeGreaterThanOrEqual(800);
    expect(phases.check_in_ms).toBeGreaterThanOrEqual(0);
    expect(typeof phases.run_task_ms).toBe('number');
    // The claim's refill: an Event invoke of the refill function, by the start route's own role.
    await until(
      tier,
      'the refill invoked',
      async () => tier.aws.asyncInvocations.filter((i) => i.functionArn.includes('poolRefill')),
      (l) => l.length >= 1,
    );
    const list = await ready(tier, POOL.size);
    // Each standby is a task started by its id, with a pool credential and no user or sandbox.
    for (const s of list) {
      const task = tier.aws.tasks.get(s.ref!)!;
      expect(task.startedBy).toBe(s.id);
      const env = envOf(task);
      expect(env.POOL_TOKEN).toMatch(/^pool_/);
      expect(env).not.toHaveProperty('SANDBOX_ID');
      expect(env).not.toHaveProperty('ENROLLMENT_TOKEN');
    }
    expect(tier.aws.denials).toEqual([]);
  }, 90_000);

  it('a start claims a standby: RUNNING within 1.5 s where the cold start took the delays, and the pool refills', async () => {
    const [before] = await ready(tier, POOL.size);
    expect(before).toBeDefined();
    const warm = await timedStart(tier, key);
    expect(warm.phases, JSON.stringify(warm.phases)).toMatchObject({ warm: true });
    expect(warm.phases.cold_reason).toBeUndefined();
    expect(warm.ms).toBeLessThan(1_500);
    // The claimed task is the sandbox's now: tagged with it, still started by its standby id.
    const claimed = (await standbys(tier)).find((s) => s.status === 'delivered' || s.status === 'claimed');
    const task = tier.aws.tasks.get(claimed!.ref!)!;
    expect(task.tags).toContainEqual({ key: 'sandbox-id', value: warm.id });
    await ready(tier, POOL.size);
    expect(tier.aws.denials).toEqual([]);
  }, 90_000);

  it("the standby credential reaches nothing but its own pool routes: no user's data, no sandbox's bridge", async () => {
    const [standby] = await ready(tier, 1);
    const token = envOf(tier.aws.tasks.get(standby!.ref!)!).POOL_TOKEN as string;
    const victim = (await tier.call('GET', '/api/v1/sandboxes/search', { key })).body.items[0].id as string;
    for (const [method, path] of [
      ['GET', '/api/settings'],
      ['GET', '/api/v1/users/me'],
      ['GET', '/api/v1/sandboxes/search'],
      ['POST', '/api/v1/sandboxes'],
      ['GET', `/api/v1/sandboxes/${victim}/bridge/commands`],
      ['POST', `/api/v1/sandboxes/${victim}/bridge/heartbeat`],
      ['GET', `/api/v1/sandboxes/${victim}/bridge/snapshots/current`],
      ['GET', `/api/v1/pool/standbys/sb_${'0'.repeat(32)}/wait`],
    ] as const) {
      const res = await tier.call(method, path, { key: token, ...(method === 'POST' ? { body: {} } : {}) });
      expect([401, 403], `${method} ${path}`).toContain(res.status);
    }
  }, 60_000);

  it('drains to zero after idleMinutes without a start (the sweeper, through its schedule): an idle pool costs nothing', async () => {
    await ready(tier, POOL.size);
    await operator(tier).send(
      new UpdateItemCommand({
        TableName: tier.outputs.PoolTableName!,
        Key: { id: { S: 'pool:default' } },
        UpdateExpression: 'SET lastStartAt = :t',
        ExpressionAttributeValues: { ':t': { S: new Date(Date.now() - 31 * 60_000).toISOString() } },
      }),
    );
    const run = await tier.bus.runSchedule('SweeperSchedule');
    expect(run.target).toMatch(/sweeper/i);
    const left = await standbys(tier);
    expect(left.filter((s) => s.status === 'ready' || s.status === 'booting')).toEqual([]);
    await until(
      tier,
      'the drained standbys stopped',
      async () =>
        [...tier.aws.tasks.values()].filter(
          (t) => t.startedBy?.startsWith('sb_') && !t.tags?.some((g) => g.key === 'sandbox-id'),
        ),
      (l) => l.every((t) => t.lastStatus === 'STOPPED'),
    );
    expect(tier.aws.denials).toEqual([]);
  }, 90_000);
});

describe("mutation: the sandbox start's grant to invoke the pool's refill removed", () => {
  let tier: TierStack;
  beforeAll(async () => {
    tier = await startTier({
      mutate: (t) => {
        withPool(t);
        // The sandbox start's only invoke is the refill's.
        expect(withoutAction(t, 'lambda:InvokeFunction', 'startSandbox')).toBeGreaterThan(0);
      },
    });
  }, 120_000);
  afterAll(async () => {
    // The stops and refills the last steps set off finish before the functions' processes go.
    await tier?.bus.settle();
    await tier?.aws.settle();
    await tier?.stop();
  });

  it('the start still answers (the refill is best effort), but the invoke is denied and no standby starts', async () => {
    const key = await createKey(tier, 'mutant');
    const res = await tier.call('POST', '/api/v1/sandboxes', { key });
    expect(res.status).toBe(200);
    await until(
      tier,
      'the denied invoke',
      async () => tier.aws.denials.filter((d) => d.request.action === 'lambda:InvokeFunction'),
      (l) => l.length >= 1,
    );
    expect(await standbys(tier)).toEqual([]);
  }, 60_000);
});
