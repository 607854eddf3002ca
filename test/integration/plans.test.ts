import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { personUserId } from '#shared/accounts/accounts.ts';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { getSandbox, sandboxPids, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { bearer, OPERATOR_AUDIENCE as AUD, useOperatorStack } from '#test/helpers/operator-stack.ts';

/**
 * Plans over HTTP against the local stack: the per-organization running limit on every path that
 * makes a sandbox run (402 with code, limit, used), the slot given back on pause, delete, crash and
 * loss, the resource factor, 20 racing starts for the last slot, and the operator's plan route.
 */
const ops = useOperatorStack({
  plansFile: join(PROJECT_ROOT, 'test/fixtures/plans/limits.json'),
  // The per-user cap beneath the plan's; the sweeper only when a test calls it.
  sandboxes: { maxRunning: 3 },
  sweepIntervalMs: 3_600_000,
});
const operator = ops.operatorToken;
let sandboxes: DynamoSandboxStore;
beforeAll(() => {
  sandboxes = new DynamoSandboxStore();
});

async function start(key: string, expected = 200) {
  const res = await ops.stack.call('POST', '/api/v1/sandboxes', { key });
  expect(res.status, res.text).toBe(expected);
  return res;
}
async function startRunning(key: string) {
  return waitForSandboxStatus(ops.stack, (await start(key)).body.id, 'RUNNING', key);
}
function expectRefused(res: { status: number; body: any }, limit: number, used: number) {
  expect(res.status).toBe(402);
  expect(res.body).toEqual({
    detail: expect.stringMatching(/running sandboxes/),
    code: 'max_running_sandboxes',
    limit,
    used,
  });
}
/** A user moved into `orgId` as a member (as an accepted invitation leaves them), stored directly. */
async function joinOrg(userId: string, key: string, orgId: string) {
  await ops.stack.orgOf(key); // made on first use
  const store = new DynamoAccountStore();
  const user = (await store.getUser(userId))!;
  expect(await store.replaceUser({ ...user, orgId, role: 'member' })).toBe(true);
  ops.stack.services.accounts.forget(userId);
}
async function setPlan(orgId: string, plan: string) {
  const res = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/plan`, {
    ...bearer(await operator()),
    body: { plan },
  });
  expect(res.status, res.text).toBe(200);
  return res;
}

describe('max_running_sandboxes per organization', () => {
  it('refuses a start over the limit with 402; pause, delete, a crash and a loss each give the slot back', async () => {
    const key = await ops.stack.newUser('org-a');
    const orgId = await ops.stack.orgOf(key);
    const a = await startRunning(key);
    const b = await startRunning(key);
    expect(await sandboxes.runningOf(orgId)).toBe(2);
    expectRefused(await start(key, 402), 2, 2);
    // Pause.
    await ops.stack.call('POST', `/api/v1/sandboxes/${a.id}/pause`, { key });
    expect(await sandboxes.runningOf(orgId)).toBe(1);
    const c = await startRunning(key);
    expectRefused(await start(key, 402), 2, 2);
    // Resume is a start: refused while full, the paused sandbox stays paused.
    expectRefused(await ops.stack.call('POST', `/api/v1/sandboxes/${a.id}/resume`, { key }), 2, 2);
    expect((await getSandbox(ops.stack, a.id, key))!.status).toBe('PAUSED');
    // Delete.
    expect((await ops.stack.call('DELETE', `/api/v1/sandboxes/${b.id}`, { key })).status).toBe(200);
    expect(await sandboxes.runningOf(orgId)).toBe(1);
    const d = await startRunning(key);
    // A crash (the process killed): ERROR, and the slot is back.
    process.kill(sandboxPids(c.id)[0]!, 'SIGKILL');
    await waitForSandboxStatus(ops.stack, c.id, 'ERROR', key);
    expect(await sandboxes.runningOf(orgId)).toBe(1);
    const e = await startRunning(key);
    // A loss (the process gone with no exit event): the sweeper's MISSING gives it back.
    await ops.stack.sandboxRuntime.stop({ sandboxId: d.id, generation: 1 });
    expect((await ops.stack.services.sandboxHousekeeping.sweep()).missing).toContain(d.id);
    expect(await sandboxes.runningOf(orgId)).toBe(1);
    // Resuming the paused one takes the free slot; a second resume of a live one changes nothing.
    expect((await ops.stack.call('POST', `/api/v1/sandboxes/${a.id}/resume`, { key })).status).toBe(200);
    expect((await ops.stack.call('POST', `/api/v1/sandboxes/${a.id}/resume`, { key })).status).toBe(200);
    expect(await sandboxes.runningOf(orgId)).toBe(2);
    // Everything stopped: zero, never below.
    for (const id of [a.id, e.id]) await ops.stack.call('DELETE', `/api/v1/sandboxes/${id}`, { key });
    await ops.stack.call('DELETE', `/api/v1/sandboxes/${d.id}`, { key });
    expect(await sandboxes.runningOf(orgId)).toBe(0);
  }, 120_000);

  it('counts every member of the organization; another organization is not affected', async () => {
    const ownerKey = await ops.stack.newUser('org-b-owner');
    const orgId = await ops.stack.orgOf(ownerKey);
    const memberKey = await ops.stack.newUser('org-b-member');
    await joinOrg('org-b-member', memberKey, orgId);
    expect(await ops.stack.orgOf(memberKey)).toBe(orgId);
    await start(ownerKey);
    await start(memberKey);
    expectRefused(await start(memberKey, 402), 2, 2);
    expectRefused(await start(ownerKey, 402), 2, 2);
    const stranger = await ops.stack.newUser('org-c');
    await start(stranger);
  }, 60_000);

  it('refuses conversation starts (V1 and legacy) with the same 402; the start task says why', async () => {
    const key = await ops.stack.newUser('org-d');
    await ops.stack.call('POST', '/api/settings', {
      key,
      body: { llm_model: 'openai/gpt-4o', llm_api_key: 'sk-test' },
    });
    await start(key);
    await start(key);
    const v1 = await ops.stack.call('POST', '/api/v1/app-conversations', {
      key,
      body: { initial_message: { content: [{ type: 'text', text: 'hi' }] } },
    });
    expectRefused(v1, 2, 2);
    const tasks = await ops.stack.call('GET', '/api/v1/app-conversations/start-tasks/search', { key });
    expect(tasks.body.items[0]).toMatchObject({ status: 'ERROR', detail: expect.stringMatching(/running sandboxes/) });
    expectRefused(await ops.stack.call('POST', '/api/conversations', { key, body: { initial_user_msg: 'hi' } }), 2, 2);
  }, 60_000);

  it('keeps the per-user cap beneath: a start over it pauses the least recently active, the org count stays right', async () => {
    const key = await ops.stack.newUser('org-e');
    const orgId = await ops.stack.orgOf(key);
    await setPlan(orgId, 'wide');
    // Each RUNNING before the next starts: check-in sets the activity time the cap orders by.
    const first = (await startRunning(key)).id;
    await startRunning(key);
    await startRunning(key);
    const fourth = await start(key);
    expect(fourth.headers.get('x-paused-sandbox-ids')).toBe(first);
    expect(await sandboxes.runningOf(orgId)).toBe(3);
  }, 60_000);

  it('20 racing starts for the last slot: exactly one runs, 19 get 402', async () => {
    const key = await ops.stack.newUser('org-race');
    const orgId = await ops.stack.orgOf(key);
    await setPlan(orgId, 'race');
    await start(key);
    await start(key);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => ops.stack.call('POST', '/api/v1/sandboxes', { key })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    const refused = results.filter((r) => r.status === 402);
    expect(refused).toHaveLength(19);
    for (const r of refused) expect(r.body).toMatchObject({ code: 'max_running_sandboxes', limit: 3, used: 3 });
    const live = (await ops.stack.call('GET', '/api/v1/sandboxes/search?limit=100', { key })).body.items.filter(
      (s: { status: string }) => s.status === 'STARTING' || s.status === 'RUNNING',
    );
    expect(live).toHaveLength(3);
    expect(await sandboxes.runningOf(orgId)).toBe(3);
  }, 120_000);
});

describe('max_resource_factor', () => {
  it('refuses a start asking for more than the plan allows (402), and allows it on a plan that does', async () => {
    const key = await ops.stack.newUser('big');
    await ops.stack.call('POST', '/api/settings', { key, body: { remote_runtime_resource_factor: 4 } });
    const res = await start(key, 402);
    expect(res.body).toEqual({
      detail: expect.stringMatching(/resource factor/),
      code: 'max_resource_factor',
      limit: 1,
      used: 4,
    });
    const orgId = await ops.stack.orgOf(key);
    expect(await sandboxes.runningOf(orgId)).toBe(0);
    await setPlan(orgId, 'wide');
    await start(key);
  }, 60_000);
});

describe('max_paused_sandboxes', () => {
  it("refuses a new sandbox while the user keeps the plan's paused ones (402); resuming one is allowed", async () => {
    const key = await ops.stack.newUser('org-kept');
    await setPlan(await ops.stack.orgOf(key), 'kept');
    const a = await startRunning(key);
    expect((await ops.stack.call('POST', `/api/v1/sandboxes/${a.id}/pause`, { key })).status).toBe(200);
    await waitForSandboxStatus(ops.stack, a.id, 'PAUSED', key);
    const refused = await start(key, 402);
    expect(refused.body).toEqual({
      detail: expect.stringMatching(/at most 1 paused sandboxes/),
      code: 'max_paused_sandboxes',
      limit: 1,
      used: 1,
    });
    expect((await ops.stack.call('POST', `/api/v1/sandboxes/${a.id}/resume`, { key })).status).toBe(200);
    await waitForSandboxStatus(ops.stack, a.id, 'RUNNING', key);
    await start(key);
  }, 60_000);
});

describe('max_conversations', () => {
  it('refuses a V1 or legacy start past the plan (402) before anything starts, and a delete frees a slot', async () => {
    const key = await ops.stack.newUser('org-few');
    await setPlan(await ops.stack.orgOf(key), 'few');
    await ops.stack.call('POST', '/api/settings', { key, body: { llm_model: 'm', llm_api_key: 'sk-few' } });
    const store = new DynamoConversationStore();
    const kept = ['a', 'b'].map((c) => c.repeat(32));
    const at = new Date().toISOString();
    for (const id of kept)
      expect(
        await store.create(
          { id, userId: 'org-few', createdAt: at, updatedAt: at, version: 1 } as ConversationRecord,
          2,
        ),
      ).toBe(true);
    const refusal = {
      detail: expect.stringMatching(/at most 2 conversations/),
      code: 'max_conversations',
      limit: 2,
      used: 2,
    };
    const v1 = await ops.stack.call('POST', '/api/v1/app-conversations', { key, body: {} });
    expect(v1.status, v1.text).toBe(402);
    expect(v1.body).toEqual(refusal);
    const legacy = await ops.stack.call('POST', '/api/conversations', { key, body: {} });
    expect(legacy.status).toBe(402);
    expect(legacy.body).toEqual(refusal);
    // Nothing was started for them, and nothing was stored.
    expect(await sandboxes.runningOf(await ops.stack.orgOf(key))).toBe(0);
    expect(await store.count('org-few', {})).toBe(2);
    expect((await ops.stack.call('DELETE', `/api/conversations/${kept[0]}`, { key })).status).toBe(200);
    expect((await ops.stack.call('POST', '/api/v1/app-conversations', { key, body: {} })).status).toBe(200);
  }, 60_000);
});

describe('PUT /api/v1/admin/orgs/{org_id}/plan', () => {
  it('is for operators only; names an unknown plan; audits the change; a foreign org id is 404', async () => {
    const key = await ops.stack.newUser('plan-target');
    const orgId = await ops.stack.orgOf(key);
    // The organization's own owner is not an operator.
    const self = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/plan`, { key, body: { plan: 'wide' } });
    expect(self.status).toBe(403);
    const fake = await ops.idp.sign({ sub: 'fake', aud: AUD, email: 'op@example.com', email_verified: false });
    expect(
      (await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/plan`, { ...bearer(fake), body: { plan: 'wide' } }))
        .status,
    ).toBe(403);
    const op = bearer(await operator());
    const unknown = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/plan`, {
      ...op,
      body: { plan: 'platinum' },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0].loc).toEqual(['body', 'plan']);
    const bad = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/plan`, {
      ...op,
      body: { plan: 'x', extra: 1 },
    });
    expect(bad.status).toBe(422);
    expect(
      (
        await ops.stack.call('PUT', '/api/v1/admin/orgs/org_000000000000000000000000/plan', {
          ...op,
          body: { plan: 'wide' },
        })
      ).status,
    ).toBe(404);
    const ok = await ops.stack.call('PUT', `/api/v1/admin/orgs/${orgId}/plan`, { ...op, body: { plan: 'wide' } });
    expect(ok.body).toEqual({ success: true, org_id: orgId, plan: 'wide', previous_plan: 'free' });
    expect((await ops.stack.call('GET', `/api/v1/orgs/${orgId}`, { key })).body.plan).toBe('wide');
    const log = await ops.stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, op);
    expect(log.body.items[0]).toMatchObject({
      action: 'plan_changed',
      actor: `operator:${personUserId(ops.idp.issuer, 'op')}`,
      detail: 'free -> wide',
    });
    // The owner cannot set a plan through the organization's own route either.
    expect((await ops.stack.call('PATCH', `/api/v1/orgs/${orgId}`, { key, body: { plan: 'free' } })).status).toBe(403);
    // An operator can, and it is audited the same way (every runtime change of a plan, so of its model policy).
    const back = await ops.stack.call('PATCH', `/api/v1/orgs/${orgId}`, { ...op, body: { plan: 'free' } });
    expect(back.status, back.text).toBe(200);
    expect((await ops.stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, op)).body.items[0]).toMatchObject({
      action: 'plan_changed',
      actor: `operator:${personUserId(ops.idp.issuer, 'op')}`,
      detail: 'wide -> free',
    });
  });
});

describe('monthly limits (sandbox_hours_per_month, monthly_spend_usd)', () => {
  it('on_limit stop: the heartbeat that crosses pauses, every sandbox pauses at its next heartbeat, new starts get 402', async () => {
    const key = await ops.stack.newUser('org-metered');
    const orgId = await ops.stack.orgOf(key);
    await setPlan(orgId, 'metered');
    const a = await startRunning(key);
    const b = await startRunning(key);
    // An hour and a second of A, metered through the heartbeat's own code at a chosen time.
    const recA = (await sandboxes.get(a.id))!;
    const record = await ops.stack.services.sandboxBridge.accrue(
      recA,
      new Date(Date.parse(recA.runningAt!) + 3601_000),
    );
    expect(record?.factorSeconds).toBe(3601);
    expect(await ops.stack.services.sandboxBridge.enforceMonthly(recA, record!)).toBe(true);
    const pausedA = (await getSandbox(ops.stack, a.id, key))!;
    expect(pausedA.status).toBe('PAUSED');
    expect(pausedA.detail).toMatch(/^Paused: the organization's plan allows 1 sandbox hours per month/);
    // B crosses with its own next heartbeat, over HTTP: told PAUSED, so its program stops.
    await new Promise((r) => setTimeout(r, 1100));
    const beat = await ops.stack.call('POST', `/api/v1/sandboxes/${b.id}/bridge/heartbeat`, {
      key: await ops.stack.sandboxKey(b.id),
      body: { active: true },
    });
    expect(beat.body.status).toBe('PAUSED');
    expect((await getSandbox(ops.stack, b.id, key))!.detail).toMatch(/sandbox hours per month/);
    expect(await sandboxes.runningOf(orgId)).toBe(0);
    const refused = await start(key, 402);
    expect(refused.body).toMatchObject({ code: 'sandbox_hours_per_month', limit: 1 });
    expect(refused.body.used).toBeGreaterThanOrEqual(1);
    expect((await ops.stack.call('POST', `/api/v1/sandboxes/${a.id}/resume`, { key })).status).toBe(402);
  }, 60_000);

  it('on_limit warn: over the spend, the sandbox keeps running and starts are allowed', async () => {
    const key = await ops.stack.newUser('org-warned');
    const orgId = await ops.stack.orgOf(key);
    await setPlan(orgId, 'warned');
    const c = await startRunning(key);
    const rec = (await sandboxes.get(c.id))!;
    const record = await ops.stack.services.sandboxBridge.accrue(rec, new Date(Date.parse(rec.runningAt!) + 3600_000));
    expect(record?.computeMicroUsd).toBe(39500);
    expect(await ops.stack.services.sandboxBridge.enforceMonthly(rec, record!)).toBe(false);
    expect((await getSandbox(ops.stack, c.id, key))!.status).toBe('RUNNING');
    await start(key);
  }, 60_000);
});
