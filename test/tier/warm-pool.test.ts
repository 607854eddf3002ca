import { randomBytes } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createKey, until } from '#test/tier/flows.ts';
import { estimatedStartDelays, type EcsTask } from '#test/tier/aws.ts';
import { operator, ready, standbys, withPool as poolIn } from '#test/tier/pool.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';
import { ofType, withoutAction, type Template } from '#test/tier/template.ts';

/*
 * The warm pool on the synthesized stack (test/tier/README.md): the default spec given a pool of 2
 * (as a deployer's `sandboxSpecs` context would), the fake ECS starting every task after delays drawn
 * from docs/performance.md's estimates at a tenth (PROVISIONING 0.5-1.5 s, PENDING 0.8-2 s). A cold
 * start pays them; a start that claims a standby does not. Then the standby credential, the drain,
 * and a mutation without the starting routes' grant to invoke the refill.
 */
const POOL = { size: 2, idleMinutes: 30, spot: false };
const COLD_MIN_MS = 1_300;

const withPool = (t: Template): void => {
  expect(poolIn(t, POOL)).toBeGreaterThan(0);
};
const envOf = (task: EcsTask) =>
  Object.fromEntries(
    (task.overrides?.containerOverrides?.[0]?.environment ?? []).map((e: { name: string; value: string }) => [
      e.name,
      e.value,
    ]),
  );

/** The standby's wait route calls through the HTTP API (status 0: still in flight, a long-poll waiting). */
const waitCalls = (tier: TierStack, standbyId: string) =>
  tier.api.records.filter((r) => r.path === `/api/v1/pool/standbys/${standbyId}/wait`);

/**
 * Ready standbys on their pool sockets: the connection `$connect` recorded on the item, open, and the
 * `wait=0` call the program makes once connected already made (its heartbeat is later than the
 * connection): a claim before that call would be found by it, not by the wake-up.
 */
const onSockets = (tier: TierStack, n: number) =>
  until(
    tier,
    `${n} standby(s) on their pool sockets`,
    async () =>
      (await standbys(tier)).filter((s) => {
        const c = s.connectionId ? tier.bridgeSocket.connections.get(s.connectionId) : undefined;
        return s.status === 'ready' && c?.open && Date.parse(s.heartbeatAt ?? '') >= c.connectedAt;
      }),
    (l) => l.length >= n,
  );

/** Opens the bridge socket with `query` and `headers`: 101 when it opened (then closed at once), else the refusal's status. */
const socketAttempt = (tier: TierStack, query: string, headers: Record<string, string>) =>
  new Promise<number>((resolve) => {
    const ws = new WebSocket(`${tier.bridgeSocket.url}/${tier.bridgeSocket.stage}?${query}`, { headers });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', () => resolve(0));
  });

/**
 * The one EMF line `fn` wrote for a start of kind `start` with these metric values (test/tier/lambda.ts
 * `metrics`: what CloudWatch's log pipeline reads from the function's stdout), each of them declared
 * as a metric of the namespace with the dimension `Start`.
 */
async function startMetrics(tier: TierStack, fn: string, start: 'warm' | 'cold', values: Record<string, number>) {
  for (const v of Object.values(values)) expect(typeof v).toBe('number');
  const [line] = await until(
    tier,
    `${fn}'s EMF line for a ${start} start with ${JSON.stringify(values)}`,
    async () =>
      tier.lambda.metrics.filter(
        (m) => m.fn === fn && m.doc.Start === start && Object.entries(values).every(([k, v]) => m.doc[k] === v),
      ),
    (l) => l.length >= 1,
  );
  const [declared] = line!.doc._aws.CloudWatchMetrics;
  expect(declared).toMatchObject({ Namespace: 'AgentConversationService', Dimensions: [['Start']] });
  for (const name of Object.keys(values)) expect(declared.Metrics).toContainEqual({ Name: name, Unit: 'Milliseconds' });
  return line!.doc;
}

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

/** A start whose claimed standby never takes its binding: STARTING at once, RUNNING cold after its 10 s deadline. */
async function coldAfterDeadline(tier: TierStack, key: string) {
  const began = Date.now();
  const res = await tier.call('POST', '/api/v1/sandboxes', { key });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('STARTING');
  const sb = await until(
    tier,
    'the cold start after the deadline',
    async () => (await tier.call('GET', `/api/v1/sandboxes?id=${res.body.id}`, { key })).body?.[0],
    (s) => s?.status === 'RUNNING' || s?.status === 'ERROR',
    40_000,
  );
  expect(sb.status, tier.explain()).toBe('RUNNING');
  expect(Date.now() - began).toBeGreaterThanOrEqual(10_000);
  expect(sb.start_phases.cold_reason).toMatch(/did not take its binding within 10 s/);
  return { res, sb };
}

describe('the warm pool, as deployed', () => {
  let tier: TierStack;
  let key: string;
  /** The first (cold) start's time to RUNNING, which a warm one beats whatever the machine's load. */
  let coldMs = 0;
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
    coldMs = cold.ms;
    // ECS's RUNNING event (the rule delivers it to the ECS events function) adds PROVISIONING and PENDING.
    const phases = await until(
      tier,
      'the cold start phases from the task event and the restore',
      async () => (await tier.call('GET', `/api/v1/sandboxes?id=${cold.id}`, { key })).body[0].start_phases,
      (p) => p.provisioning_ms !== undefined && p.restore_ms !== undefined,
    );
    expect(phases.provisioning_ms).toBeGreaterThanOrEqual(500);
    expect(phases.pending_ms).toBeGreaterThanOrEqual(800);
    expect(phases.check_in_ms).toBeGreaterThanOrEqual(0);
    expect(typeof phases.run_task_ms).toBe('number');
    // The same phases as CloudWatch metrics: the check-in's line (RunTask, the total to RUNNING) and the
    // task event's (PROVISIONING, PENDING); the restore the program reports after its check-in has its own.
    await startMetrics(tier, 'sandboxCheckIn', 'cold', {
      StartRunTask: phases.run_task_ms,
      StartTotal: phases.total_ms - phases.restore_ms,
    });
    await startMetrics(tier, 'ecsEvents', 'cold', {
      StartProvisioning: phases.provisioning_ms,
      StartPending: phases.pending_ms,
    });
    await startMetrics(tier, 'sandboxHeartbeat', 'cold', { StartRestore: phases.restore_ms });
    // Each phase counted once (this is the only cold start so far): the container's start to the check-in
    // on the line of whichever of the check-in and the task event came last, and PROVISIONING and PENDING
    // only on the event's, even when the event came first.
    const coldLines = tier.lambda.metrics.filter((m) => m.doc.Start === 'cold');
    for (const [name, value] of [
      ['StartRunTask', phases.run_task_ms],
      ['StartProvisioning', phases.provisioning_ms],
      ['StartPending', phases.pending_ms],
      ['StartCheckIn', phases.check_in_ms],
      ['StartRestore', phases.restore_ms],
      ['StartTotal', phases.total_ms - phases.restore_ms],
    ])
      expect(
        coldLines.filter((m) => m.doc[name] !== undefined).map((m) => m.doc[name]),
        name,
      ).toEqual([value]);
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

  it('a start claims a standby: RUNNING without the delays the cold start took (no RunTask, no PROVISIONING or PENDING), and the pool refills', async () => {
    // Standbys waiting on their pool sockets (one that just checked in takes a claim at its first wait=0 instead).
    const [before] = await onSockets(tier, POOL.size);
    expect(before).toBeDefined();
    const warm = await timedStart(tier, key);
    expect(warm.phases, JSON.stringify(warm.phases)).toMatchObject({ warm: true });
    expect(warm.phases.cold_reason).toBeUndefined();
    // A claim and the standby's check-in, nothing of a task's start. The 1.5 s target is the bench's
    // (npm run bench -- fargate-tier, on a quiet machine): a timed bound here failed once under a load of 14.
    for (const phase of ['run_task_ms', 'provisioning_ms', 'pending_ms']) expect(warm.phases).not.toHaveProperty(phase);
    expect(warm.phases.claim_ms).toBeGreaterThanOrEqual(0);
    expect(warm.phases.check_in_ms).toBeGreaterThanOrEqual(0);
    expect(warm.ms, JSON.stringify(warm.phases)).toBeLessThan(coldMs);
    // The claimed task is the sandbox's now: tagged with it, still started by its standby id.
    const claimed = (await standbys(tier)).find((s) => s.status === 'delivered' || s.status === 'claimed');
    const task = tier.aws.tasks.get(claimed!.ref!)!;
    expect(task.tags).toContainEqual({ key: 'sandbox-id', value: warm.id });
    // Its phases as CloudWatch metrics: the claim, the claim to the acknowledged binding, the total to RUNNING.
    const phases = await until(
      tier,
      'the warm start phases with the restore',
      async () => (await tier.call('GET', `/api/v1/sandboxes?id=${warm.id}`, { key })).body[0].start_phases,
      (p) => p.restore_ms !== undefined,
    );
    await startMetrics(tier, 'sandboxCheckIn', 'warm', {
      StartClaim: phases.claim_ms,
      StartCheckIn: phases.check_in_ms,
      StartTotal: phases.total_ms - phases.restore_ms,
    });
    await ready(tier, POOL.size);
    expect(tier.aws.denials).toEqual([]);
  }, 90_000);

  it('standbys wait on their pool sockets, not in a long-poll: the claim wakes one (PostToConnection) and it takes its binding at once', async () => {
    const waiting = await onSockets(tier, POOL.size);
    // No standby has a wait call in flight: none long-polls (each call is a wait=0 on the socket).
    for (const s of waiting) expect(waitCalls(tier, s.id).filter((r) => r.status === 0)).toEqual([]);
    const before = new Map(waiting.map((s) => [s.id, waitCalls(tier, s.id).length]));
    const pushesBefore = tier.aws.calls.filter((c) => c.operation === 'execute-api:ManageConnections').length;
    const warm = await timedStart(tier, key);
    expect(warm.phases, JSON.stringify(warm.phases)).toMatchObject({ warm: true });
    expect(warm.ms, JSON.stringify(warm.phases)).toBeLessThan(coldMs);
    const claimed = (await standbys(tier)).find((s) => before.has(s.id) && s.status === 'delivered');
    expect(claimed, 'a standby that was on its socket took the binding').toBeDefined();
    // The wake-up: PostToConnection by the start route's own role, allowed by its ManageConnections grant (the
    // SDK may repeat a post whose connection reset: a second wake-up finds the binding taken and asks nothing).
    const startRole = tier.lambda.byName('startSandbox').roleArn;
    const pushes = tier.aws.calls.slice(pushesBefore).filter((c) => c.operation === 'execute-api:ManageConnections');
    expect(pushes.length).toBeGreaterThanOrEqual(1);
    for (const p of pushes)
      expect(p).toEqual({ principal: startRole, operation: 'execute-api:ManageConnections', allowed: true });
    // Taken through the wait route once woken (one call, or two if its 20 s heartbeat fell in the same second).
    const after = waitCalls(tier, claimed!.id).length - before.get(claimed!.id)!;
    expect(after).toBeGreaterThanOrEqual(1);
    expect(after).toBeLessThanOrEqual(2);
    // Delivered, its pool credential is dead: the pool socket refuses it too.
    const token = envOf(tier.aws.tasks.get(claimed!.ref!)!).POOL_TOKEN as string;
    expect(await socketAttempt(tier, `standby_id=${claimed!.id}`, { 'x-session-api-key': token })).toBe(401);
    expect(tier.aws.denials).toEqual([]);
  }, 90_000);

  it("the pool socket takes a standby's credential for its own item only: not another standby's, not a sandbox's; a sandbox's key is no standby's", async () => {
    const [a, b] = await onSockets(tier, 2);
    const tokenA = envOf(tier.aws.tasks.get(a!.ref!)!).POOL_TOKEN as string;
    const victim = (await tier.call('GET', '/api/v1/sandboxes/search', { key })).body.items.find(
      (s: { status: string }) => s.status === 'RUNNING',
    ).id as string;
    const victimKey = (await tier.sandboxKey(victim))!;
    const pool = { 'x-session-api-key': tokenA };
    // Another pool item registered with this credential: refused.
    expect(await socketAttempt(tier, `standby_id=${b!.id}`, pool)).toBe(401);
    // A sandbox's socket (its commands) with a pool credential: refused, alone or beside its own standby id.
    expect(await socketAttempt(tier, `sandbox_id=${victim}`, pool)).toBe(401);
    expect(await socketAttempt(tier, `standby_id=${a!.id}&sandbox_id=${victim}`, pool)).toBe(401);
    // A sandbox's session key, or a user's key, as a standby: refused.
    expect(await socketAttempt(tier, `standby_id=${a!.id}`, { 'x-session-api-key': victimKey })).toBe(401);
    expect(await socketAttempt(tier, `standby_id=${a!.id}`, { 'x-session-api-key': key })).toBe(401);
    expect(await socketAttempt(tier, `standby_id=${a!.id}`, {})).toBe(401);
    // Nothing was recorded: each standby still has its own connection, and the victim's socket is its own.
    const now = await standbys(tier);
    expect(now.find((s) => s.id === a!.id)?.connectionId).toBe(a!.connectionId);
    expect(now.find((s) => s.id === b!.id)?.connectionId).toBe(b!.connectionId);
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

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

  it('a resume with a 50 MB workspace claims a standby: RUNNING without the delays of a cold start, the restore a phase of its own after it', async () => {
    await ready(tier, POOL.size);
    const first = await timedStart(tier, key);
    const taskOf = (id: string, generation: number) =>
      [...tier.aws.tasks.values()].find(
        (t) =>
          t.desiredStatus === 'RUNNING' &&
          t.tags?.some((g) => g.key === 'sandbox-id' && g.value === id) &&
          t.tags?.some((g) => g.key === 'sandbox-generation' && g.value === String(generation)),
      );
    const task = taskOf(first.id, 1)!;
    // 50 MB that gzip cannot shrink, on the task's own disk: the snapshot the pause saves is that big.
    const big = join(tier.aws.taskPath(task.taskArn, '/workspace'), 'big.bin');
    writeFileSync(big, randomBytes(50 * 1024 * 1024));
    expect((await tier.call('POST', `/api/v1/sandboxes/${first.id}/pause`, { key })).status).toBe(200);
    const [snapshot] = await until(
      tier,
      'the 50 MB snapshot saved at the pause',
      async () => (task.lastStatus === 'STOPPED' ? tier.aws.objectKeys(`sandboxes/${first.id}/`) : []),
      (k) => k.length === 1,
      120_000,
    );
    expect(snapshot).toBeDefined();
    await onSockets(tier, POOL.size);
    const began = Date.now();
    expect((await tier.call('POST', `/api/v1/sandboxes/${first.id}/resume`, { key })).status).toBe(200);
    const running = await until(
      tier,
      'the resume RUNNING',
      async () => (await tier.call('GET', `/api/v1/sandboxes?id=${first.id}`, { key })).body?.[0],
      (s) => s?.status === 'RUNNING' || s?.status === 'ERROR',
      30_000,
    );
    const ms = Date.now() - began;
    expect(running.status, tier.explain()).toBe('RUNNING');
    expect(running.start_phases, JSON.stringify(running.start_phases)).toMatchObject({ warm: true });
    // Its 1.5 s target is the bench's (fargate-tier), as for the empty workspace.
    for (const phase of ['run_task_ms', 'provisioning_ms', 'pending_ms'])
      expect(running.start_phases).not.toHaveProperty(phase);
    expect(ms, JSON.stringify(running.start_phases)).toBeLessThan(coldMs);
    // The restore follows the acknowledged binding and is reported once, as its own phase, into the total.
    const phases = await until(
      tier,
      'the restore phase',
      async () => (await tier.call('GET', `/api/v1/sandboxes?id=${first.id}`, { key })).body[0].start_phases,
      (p) => p.restore_ms !== undefined,
      60_000,
    );
    expect(phases.restore_ms).toBeGreaterThan(0);
    expect(phases.total_ms).toBeGreaterThanOrEqual(phases.check_in_ms + phases.restore_ms);
    // The restore's own EMF line, written by the heartbeat that reported it.
    await startMetrics(tier, 'sandboxHeartbeat', 'warm', { StartRestore: phases.restore_ms });
    await startMetrics(tier, 'sandboxCheckIn', 'warm', {
      StartClaim: phases.claim_ms,
      StartTotal: phases.total_ms - phases.restore_ms,
    });
    const next = taskOf(first.id, 2)!;
    expect(next.startedBy).toMatch(/^sb_/);
    expect(statSync(join(tier.aws.taskPath(next.taskArn, '/workspace'), 'big.bin')).size).toBe(50 * 1024 * 1024);
    expect((await tier.call('DELETE', `/api/v1/sandboxes/${first.id}`, { key })).status).toBe(200);
    expect(tier.aws.denials).toEqual([]);
  }, 240_000);

  it('a claimed standby that never takes its binding: its deadline (a state machine: 10 s, then the sweeper) starts the sandbox cold', async () => {
    const list = await ready(tier, POOL.size);
    // Every ready standby frozen: whichever the start claims never takes its binding.
    for (const s of list) tier.aws.signalTask(s.ref!, 'SIGSTOP');
    try {
      const { res, sb } = await coldAfterDeadline(tier, key);
      expect(sb.start_phases).toMatchObject({ warm: false });
      // One execution for that claim, which invoked the sweeper under the state machine's own role.
      const runs = [...tier.aws.executions.values()].filter(
        (e) => (e.input as any).bindingDeadline?.sandbox_id === res.body.id,
      );
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ status: 'SUCCEEDED', input: { bindingDeadline: { generation: 1 } } });
      // The sweeper's answer: that sandbox started cold again (`retried`, as a full sweep reports it).
      expect(runs[0]!.results).toEqual([
        expect.objectContaining({ ok: true, result: expect.objectContaining({ retried: [res.body.id] }) }),
      ]);
      expect((await tier.call('DELETE', `/api/v1/sandboxes/${res.body.id}`, { key })).status).toBe(200);
    } finally {
      for (const s of list) tier.aws.signalTask(s.ref!, 'SIGCONT');
    }
    expect(tier.aws.denials).toEqual([]);
  }, 90_000);

  it('an unclaimed standby whose Spot capacity is reclaimed leaves the pool and is replaced at once by the ECS events function', async () => {
    // Settled first (the steps before leave refills under way): the pool's size, every standby ready.
    await tier.bus.settle();
    await tier.aws.settle();
    const before = await until(
      tier,
      `the pool settled at ${POOL.size} ready standbys`,
      async () => (await standbys(tier)).filter((s) => s.status === 'ready' || s.status === 'booting'),
      (l) => l.length === POOL.size && l.every((s) => s.status === 'ready'),
    );
    const victim = before[0]!;
    const callsBefore = tier.aws.calls.length;
    const interruptedAt = Date.now();
    // Fargate Spot's interruption: the task's STOPPED event says `SpotInterruption` (this pool runs on
    // FARGATE, so that its standbys serve the default spec; the events function reads the stop code).
    tier.aws.interruptTask(victim.ref!);
    await until(
      tier,
      'the interrupted standby out of the pool',
      async () => standbys(tier),
      (l) => !l.some((s) => s.id === victim.id),
    );
    expect(tier.aws.tasks.get(victim.ref!)).toMatchObject({ lastStatus: 'STOPPED', stopCode: 'SpotInterruption' });
    // No sweep ran: the events function started the replacement itself, under its own role, and it checks in.
    const since = () => [...tier.aws.tasks.values()].filter((t) => t.createdAt * 1000 >= interruptedAt);
    await until(
      tier,
      'a standby task started since the interruption',
      async () => since(),
      (l) => l.length >= 1,
    );
    await tier.bus.settle();
    const started = since();
    expect(started).toHaveLength(1);
    const runs = tier.aws.calls.slice(callsBefore).filter((c) => c.operation === 'ecs:RunTask');
    expect(runs).toContainEqual({
      principal: tier.lambda.byName('ecsEvents').roleArn,
      operation: 'ecs:RunTask',
      allowed: true,
    });
    await until(
      tier,
      'the replacement ready',
      async () => standbys(tier),
      (l) => l.some((s) => s.id === started[0]!.startedBy && s.status === 'ready'),
    );
    expect(tier.aws.denials).toEqual([]);
  }, 60_000);

  it('a deploy drains standbys of the old task definition: the sweep stops them and starts standbys of the new one', async () => {
    const list = await ready(tier, POOL.size);
    const old = list[0]!;
    const current = old.revision!;
    expect(current).toBe(tier.aws.tasks.get(old.ref!)!.taskDefinitionArn);
    // As if started from the task definition's revision before the deploy.
    const previous = `${current.replace(/:\d+$/, '')}:0`;
    expect(previous).not.toBe(current);
    await operator(tier).send(
      new UpdateItemCommand({
        TableName: tier.outputs.PoolTableName!,
        Key: { id: { S: old.id } },
        UpdateExpression: 'SET revision = :r',
        ExpressionAttributeValues: { ':r': { S: previous } },
      }),
    );
    const callsBefore = tier.aws.calls.length;
    const run = await tier.bus.runSchedule('SweeperSchedule');
    expect(run.result.ok, JSON.stringify(run.result)).toBe(true);
    // Drained: its item gone and its task stopped, by the sweeper's role; the others kept.
    const after = await standbys(tier);
    expect(after.some((s) => s.id === old.id)).toBe(false);
    for (const s of list.slice(1)) expect(after.some((a) => a.id === s.id)).toBe(true);
    await until(
      tier,
      'the old standby task stopped',
      async () => tier.aws.tasks.get(old.ref!)!,
      (t) => t.lastStatus === 'STOPPED',
    );
    const sweeper = tier.lambda.byName('sweeper').roleArn;
    const ops = tier.aws.calls.slice(callsBefore).filter((c) => c.operation.startsWith('ecs:'));
    expect(ops).toContainEqual({ principal: sweeper, operation: 'ecs:StopTask', allowed: true });
    expect(ops).toContainEqual({ principal: sweeper, operation: 'ecs:RunTask', allowed: true });
    // The pool is full again, every standby of the current task definition.
    const now = await ready(tier, POOL.size);
    for (const s of now) expect(s.revision).toBe(current);
    expect(tier.aws.denials).toEqual([]);
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

describe("mutation: the sandbox start's grants to invoke the pool's refill and to push on the bridge socket removed", () => {
  let tier: TierStack;
  beforeAll(async () => {
    tier = await startTier({
      mutate: (t) => {
        withPool(t);
        // The sandbox start's only invoke is the refill's.
        expect(withoutAction(t, 'lambda:InvokeFunction', 'startSandbox')).toBeGreaterThan(0);
        // Its only push is a claimed standby's wake-up.
        expect(withoutAction(t, 'execute-api:ManageConnections', 'startSandbox')).toBeGreaterThan(0);
        // Standbys heartbeat once a minute here: no heartbeat's wait call delivers the binding before the 10 s deadline.
        for (const [, r] of ofType(t, 'AWS::ECS::TaskDefinition'))
          r.Properties.ContainerDefinitions[0].Environment = [
            ...(r.Properties.ContainerDefinitions[0].Environment ?? []),
            { Name: 'POOL_HEARTBEAT_SECONDS', Value: '60' },
          ];
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

  it('without the push grant a claim still claims; the standby is never woken, and its binding deadline starts the sandbox cold', async () => {
    const key = await createKey(tier, 'mutant-push');
    // The last start opened the pool; its refill was denied, so the sweep (its own grant) tops it up.
    await tier.bus.runSchedule('SweeperSchedule');
    // Both standbys on their sockets, each past the one wait call it makes when its socket opens: a claim
    // of one still connecting would be found by that call (in CI once, RUNNING after 0.5 s), not by a wake-up.
    const on = await onSockets(tier, POOL.size);
    expect(on).toHaveLength(POOL.size);
    await coldAfterDeadline(tier, key);
    // The wake-up was denied to the start's role; the claim answered STARTING all the same.
    expect(
      tier.aws.denials.filter(
        (d) =>
          d.request.action === 'execute-api:ManageConnections' &&
          d.principal === tier.lambda.byName('startSandbox').roleArn,
      ),
    ).toHaveLength(1);
  }, 90_000);
});
