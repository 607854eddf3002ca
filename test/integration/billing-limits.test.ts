import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { baseSandboxConfig } from '#shared/sandboxes/config.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import { logger } from '#shared/logging.ts';
import { documentClient } from '#shared/store/dynamo.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { conversationRecord } from '#test/helpers/conversations.ts';
import { processEnv, sandboxPids } from '#test/helpers/sandboxes.ts';
import { bearer, OPERATOR_AUDIENCE as AUD, useOperatorStack } from '#test/helpers/operator-stack.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { csvRecords } from '#test/helpers/csv.ts';
import { readFileSync } from 'node:fs';

/**
 * Notices and prepaid credits over the local stack. Notices: many heartbeats crossing a threshold together send exactly
 * one notice (the conditional put on the notice's key decides), the console's list is the
 * organization's owners' and admins' only, newest month first and paged with a signed cursor.
 * The racers are the heartbeat's own metering (`SandboxBridge.meter`) on sandbox records of the
 * test's making: their intervals are the test's to choose, and no process needs to run.
 */
const ops = useOperatorStack({
  plansFile: join(PROJECT_ROOT, 'test/fixtures/plans/credits.json'),
  specsFile: join(PROJECT_ROOT, 'test/fixtures/sandboxes/specs.json'),
  sweepIntervalMs: 3_600_000,
});
const { operator } = ops;
afterEach(() => {
  vi.restoreAllMocks();
});

/** `n` RUNNING sandboxes of the organization, on `plan`, each checked in at `runningAt` (records only). */
function racers(orgId: string, userId: string, plan: string, n: number, runningAt: string): SandboxRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `race-${orgId.slice(-6)}-${i}`,
    userId,
    orgId,
    specId: 'default',
    status: 'RUNNING',
    version: 1,
    generation: 1,
    createdAt: runningAt,
    updatedAt: runningAt,
    lastActivityAt: runningAt,
    runningAt,
    plan,
  }));
}
/** A new user moved into `orgId` as a member (as an accepted invitation leaves them), stored directly. */
async function joinAsMember(userId: string, orgId: string, role: 'member' | 'admin' = 'member'): Promise<string> {
  const key = await ops.stack.newUser(userId);
  await ops.stack.orgOf(key);
  const accounts = new DynamoAccountStore();
  const user = (await accounts.getUser(userId))!;
  expect(await accounts.replaceUser({ ...user, orgId, role })).toBe(true);
  ops.stack.services.accounts.forget(userId);
  return key;
}
const thresholdLines = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls.filter((c) => c[0] === 'usage.threshold').map((c) => c[1] as Record<string, unknown>);

describe('80% and 100% notices', () => {
  it('a heartbeat that crosses nothing reads nothing more: the notice rides on the ADD it makes anyway', async () => {
    const key = await ops.stack.newUser('notice-quiet');
    const orgId = await ops.stack.orgOf(key);
    const [rec] = racers(orgId, 'notice-quiet', 'roomy', 1, new Date(Date.now() - 600_000).toISOString());
    const sent: string[] = [];
    const client = documentClient();
    client.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(
          `${context.commandName}@${((args.input as { TableName?: string }).TableName ?? '').replace(/^acs-/, '')}`,
        );
        return next(args);
      },
      { step: 'initialize', name: 'countNoticeRequests' },
    );
    try {
      await ops.stack.services.sandboxBridge.meter(rec!, new Date(Date.parse(rec!.runningAt!) + 60_000));
    } finally {
      client.middlewareStack.remove('countNoticeRequests');
    }
    // The interval's start, the record, its two totals, the month: as before notices existed.
    expect(sent).toEqual([
      'QueryCommand@usage',
      'PutItemCommand@usage',
      'UpdateItemCommand@usage',
      'UpdateItemCommand@usage',
      'QueryCommand@usage',
    ]);
  });

  it('20 heartbeats crossing together send each threshold exactly once; later crossings send nothing', async () => {
    const key = await ops.stack.newUser('notice-owner');
    const orgId = await ops.stack.orgOf(key);
    await ops.stack.putOnPlan('notice-owner', 'quarter-hour', key);
    const warn = vi.spyOn(logger, 'warn').mockImplementation(() => {});
    // 0.25 hours = 900 s: 80% at 720 s, 100% at 900 s; 20 racers of 60 s each make 1200 s.
    const t0 = new Date(Date.now() - 3600_000);
    const recs = racers(orgId, 'notice-owner', 'quarter-hour', 20, t0.toISOString());
    const at = new Date(t0.getTime() + 60_000);
    await Promise.all(recs.map((r) => ops.stack.services.sandboxBridge.meter(r, at)));
    const sent = thresholdLines(warn);
    expect(sent.map((n) => `${n.limit}@${n.threshold}`).sort()).toEqual([
      'sandbox_hours_per_month@100',
      'sandbox_hours_per_month@80',
    ]);
    expect(sent.every((n) => n.orgId === orgId && n.period === t0.toISOString().slice(0, 7))).toBe(true);
    // The crossing heartbeat saw the total its own ADD left: 80% is noticed at 720 s (12 records) exactly.
    expect(sent.find((n) => n.threshold === 80)).toMatchObject({ used: 0.2, limitValue: 0.25, unit: 'hours' });
    expect(sent.find((n) => n.threshold === 100)).toMatchObject({ used: 0.25 });
    // More heartbeats above the limit, racing again: nothing more (once per month).
    warn.mockClear();
    const later = new Date(at.getTime() + 60_000);
    await Promise.all(recs.map((r) => ops.stack.services.sandboxBridge.meter(r, later)));
    expect(thresholdLines(warn)).toEqual([]);

    const list = await ops.stack.call('GET', '/api/v1/notifications', { key });
    expect(list.status, list.text).toBe(200);
    expect(list.body.items.map((n: { threshold: number }) => n.threshold)).toEqual([100, 80]);
    expect(list.body.items[0]).toEqual({
      org_id: orgId,
      period: t0.toISOString().slice(0, 7),
      limit: 'sandbox_hours_per_month',
      threshold: 100,
      used: 0.25,
      limit_value: 0.25,
      unit: 'hours',
      at: expect.any(String),
    });
    expect(list.body.next_page_id).toBeNull();
    // Paged: one a page, the cursor signed for this organization's list.
    const first = await ops.stack.call('GET', '/api/v1/notifications?limit=1', { key });
    expect(first.body.items).toHaveLength(1);
    expect(first.body.next_page_id).toEqual(expect.any(String));
    const second = await ops.stack.call('GET', `/api/v1/notifications?limit=1&page_id=${first.body.next_page_id}`, {
      key,
    });
    expect(second.body.items.map((n: { threshold: number }) => n.threshold)).toEqual([80]);

    // Another organization sees none of it, and cannot use this one's cursor.
    const otherKey = await ops.stack.newUser('notice-stranger');
    const other = await ops.stack.call('GET', '/api/v1/notifications', { key: otherKey });
    expect(other.status).toBe(200);
    expect(other.body.items).toEqual([]);
    const replay = await ops.stack.call('GET', `/api/v1/notifications?limit=1&page_id=${first.body.next_page_id}`, {
      key: otherKey,
    });
    expect(replay.status).toBe(400);
    // A member of the organization: 403.
    const memberKey = await joinAsMember('notice-member', orgId);
    expect((await ops.stack.call('GET', '/api/v1/notifications', { key: memberKey })).status).toBe(403);
    expect((await ops.stack.call('GET', '/api/v1/notifications?limit=0', { key })).status).toBe(422);
    expect((await ops.stack.call('GET', '/api/v1/notifications', { key: null })).status).toBe(401);
  }, 60_000);

  it('20 sandboxes crossing the monthly limit together: all paused, the overshoot at most one heartbeat interval each', async () => {
    const key = await ops.stack.newUser('race-stop');
    const orgId = await ops.stack.orgOf(key);
    await ops.stack.putOnPlan('race-stop', 'quarter-hour-stop', key);
    vi.spyOn(logger, 'warn').mockImplementation(() => {});
    const beat = baseSandboxConfig.heartbeatSeconds;
    const limitSeconds = 0.25 * 3600;
    // Stored, so a pause is a real transition; each round re-reads them as the heartbeat's key check does.
    // Checked in 10 minutes ago, within today (so this month's limit, the one a start checks).
    const t0 = new Date(Math.max(Date.now() - 600_000, Date.parse(new Date().toISOString().slice(0, 10))));
    const recs = racers(orgId, 'race-stop', 'quarter-hour-stop', 20, t0.toISOString());
    const sandboxes = new DynamoSandboxStore();
    await Promise.all(recs.map((r) => sandboxes.create(r)));
    const paused: boolean[][] = [];
    // Heartbeats every interval, all 20 racing each time: 20 x 30 s, then 1200 s (over 900), then the rest.
    for (let round = 1; round <= 4; round++) {
      const at = new Date(t0.getTime() + round * beat * 1000);
      const now = await Promise.all(recs.map((r) => sandboxes.get(r.id)));
      paused.push(
        await Promise.all(
          now.map((r) => (r!.status === 'RUNNING' ? ops.stack.services.sandboxBridge.meter(r!, at) : false)),
        ),
      );
    }
    expect(paused[0]!.filter(Boolean)).toHaveLength(0);
    // The round that crosses: every heartbeat whose own ADD left the month at or over the limit pauses its sandbox.
    expect(paused[1]!.filter(Boolean)).toHaveLength(11);
    // The others pause at their next heartbeat; after that nothing is running and nothing more is metered.
    expect(paused[2]!.filter(Boolean)).toHaveLength(9);
    expect(paused[3]!.filter(Boolean)).toHaveLength(0);
    const after = await Promise.all(recs.map((r) => sandboxes.get(r.id)));
    expect(after.map((r) => r!.status)).toEqual(recs.map(() => 'PAUSED'));
    expect(after.every((r) => /sandbox hours per month/.test(r!.detail ?? ''))).toBe(true);
    // The ledger: its records and the organization's day total agree, and overshoot the limit by at
    // most one heartbeat interval of compute per sandbox (here 1470 s against 900 + 20 x 30).
    const usage = new DynamoUsageStore();
    const records = (await Promise.all(recs.map((r) => usage.computeRecords(r.id, 1)))).flat();
    const recorded = records.reduce((n, c) => n + c.seconds, 0);
    const day = t0.toISOString().slice(0, 10);
    const [orgDay] = await usage.orgDays(orgId, day, day);
    expect(orgDay!.seconds).toBe(recorded);
    expect(recorded).toBeGreaterThanOrEqual(limitSeconds);
    expect(recorded).toBeLessThanOrEqual(limitSeconds + recs.length * beat);
    // A start is refused, naming the limit.
    const refused = await ops.stack.call('POST', '/api/v1/sandboxes', { key });
    expect(refused.status, refused.text).toBe(402);
    expect(refused.body).toMatchObject({ code: 'sandbox_hours_per_month', limit: 0.25 });
  }, 60_000);
});

const grant = (
  orgId: string,
  body: unknown,
  auth: { key: string | null; headers: Record<string, string> },
  idem?: string,
) =>
  ops.stack.call('POST', `/api/v1/admin/orgs/${orgId}/credits`, {
    ...auth,
    body,
    headers: { ...auth.headers, ...(idem ? { 'idempotency-key': idem } : {}) },
  });

describe('POST /api/v1/admin/orgs/{org_id}/credits', () => {
  it('is for operators only; a foreign org is 404; bad amounts are 422 naming amount_usd; audited', async () => {
    const key = await ops.stack.newUser('credit-owner');
    const orgId = await ops.stack.orgOf(key);
    const op = await operator();
    // The organization's own owner, a member, a user key, an operator's email unverified: not operators.
    expect((await grant(orgId, { amount_usd: 5 }, { key, headers: {} })).status).toBe(403);
    const memberKey = await joinAsMember('credit-member', orgId);
    expect((await grant(orgId, { amount_usd: 5 }, { key: memberKey, headers: {} })).status).toBe(403);
    const fake = bearer(await ops.idp.sign({ sub: 'fake', aud: AUD, email: 'op@example.com', email_verified: false }));
    expect((await grant(orgId, { amount_usd: 5 }, fake)).status).toBe(403);
    expect((await grant('org_000000000000000000000000', { amount_usd: 5 }, op)).status).toBe(404);
    expect((await grant('not-an-org', { amount_usd: 5 }, op)).status).toBe(422);
    for (const amount of [0, -1, 1.0000001, 0.0000001, '5', null, 1e7, 1e21]) {
      const res = await grant(orgId, { amount_usd: amount }, op);
      expect(res.status, `${amount}: ${res.text}`).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'amount_usd']);
    }
    expect((await grant(orgId, {}, op)).body.detail[0].loc).toEqual(['body', 'amount_usd']);
    expect((await grant(orgId, { amount_usd: 1, extra: true }, op)).status).toBe(422);
    expect((await grant(orgId, { amount_usd: 1, note: 'x'.repeat(201) }, op)).body.detail[0].loc).toEqual([
      'body',
      'note',
    ]);

    const ok = await grant(orgId, { amount_usd: 12.345678, note: 'invoice 42' }, op);
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body).toEqual({
      success: true,
      org_id: orgId,
      granted_usd: 12.345678,
      total_granted_usd: 12.345678,
      spent_usd: 0,
      balance_usd: 12.345678,
      since: new Date().toISOString().slice(0, 10),
      prepaid: false,
    });
    const again = await grant(orgId, { amount_usd: 0.000001 }, op);
    expect(again.body).toMatchObject({ granted_usd: 0.000001, total_granted_usd: 12.345679, balance_usd: 12.345679 });
    const log = await ops.stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, op);
    expect(log.body.items.filter((e: { action: string }) => e.action === 'credits_granted')).toEqual([
      expect.objectContaining({ detail: '+0.000001 USD', target: orgId }),
      expect.objectContaining({ detail: '+12.345678 USD: invoice 42', target: orgId }),
    ]);
  });

  it('Idempotency-Key: a repeat answers the first answer, another body is 422, 20 racing repeats grant once', async () => {
    const key = await ops.stack.newUser('credit-idem');
    const orgId = await ops.stack.orgOf(key);
    const op = await operator();
    const idem = randomUUID();
    const first = await grant(orgId, { amount_usd: 3 }, op, idem);
    expect(first.status, first.text).toBe(201);
    const repeat = await grant(orgId, { amount_usd: 3 }, op, idem);
    expect(repeat.status).toBe(201);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.text).toBe(first.text);
    const other = await grant(orgId, { amount_usd: 4 }, op, idem);
    expect(other.status).toBe(422);
    expect(other.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);

    const raceKey = randomUUID();
    const answers = await Promise.all(Array.from({ length: 20 }, () => grant(orgId, { amount_usd: 2 }, op, raceKey)));
    expect(
      answers.every((a) => a.status === 201 || a.status === 409),
      answers.map((a) => a.status).join(),
    ).toBe(true);
    expect(answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    const usage = await ops.stack.call('GET', '/api/v1/usage', { key });
    // 3 + 2: the racing key granted once.
    expect(usage.body.limits.credits).toMatchObject({ total_granted_usd: 5, balance_usd: 5 });
  }, 30_000);
});

const correct = (
  orgId: string,
  body: unknown,
  auth: { key: string | null; headers: Record<string, string> },
  idem?: string,
) =>
  ops.stack.call('POST', `/api/v1/admin/orgs/${orgId}/corrections`, {
    ...auth,
    body,
    headers: { ...auth.headers, ...(idem ? { 'idempotency-key': idem } : {}) },
  });

describe('POST /api/v1/admin/orgs/{org_id}/corrections', () => {
  it('operators only; a record of its own in the day totals, GET /api/v1/usage and the FOCUS export (ChargeClass Correction); counted once', async () => {
    const key = await ops.stack.newUser('corr-owner');
    const orgId = await ops.stack.orgOf(key);
    const memberKey = await joinAsMember('corr-member', orgId);
    const adminKey = await joinAsMember('corr-admin', orgId, 'admin');
    const strangerKey = await ops.stack.newUser('corr-stranger');
    const strangerOrg = await ops.stack.orgOf(strangerKey);
    const op = await operator();
    // The 15th of last month: a previously invoiced billing period.
    const first = new Date(`${new Date().toISOString().slice(0, 7)}-01T00:00:00Z`);
    const day = `${new Date(first.getTime() - 17 * 86_400_000).toISOString().slice(0, 8)}15`;
    const body = { amount_usd: -1.25, day, reason: 'outage credit, ticket 812', user_id: 'corr-member' };
    // Not operators: the owner, a member, an admin of the organization, another organization's owner.
    for (const k of [key, memberKey, adminKey, strangerKey])
      expect((await correct(orgId, body, { key: k, headers: {} })).status).toBe(403);
    expect((await correct(orgId, body, { key: null, headers: {} })).status).toBe(401);
    // A foreign organization, a user of another organization: 404.
    expect((await correct('org_000000000000000000000000', body, op)).status).toBe(404);
    expect((await correct(orgId, { ...body, user_id: 'corr-stranger' }, op)).status).toBe(404);
    expect((await correct(orgId, { ...body, user_id: 'nobody-at-all' }, op)).status).toBe(404);
    const future = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    for (const [bad, field] of [
      [{ amount_usd: 0 }, 'amount_usd'],
      [{ amount_usd: 1e7 }, 'amount_usd'],
      [{ amount_usd: -0.0000001 }, 'amount_usd'],
      [{ amount_usd: '-1' }, 'amount_usd'],
      [{ day: future }, 'day'],
      [{ day: '2026-02-30' }, 'day'],
      [{ day: 'yesterday' }, 'day'],
      [{ reason: '' }, 'reason'],
      [{ reason: 'x'.repeat(201) }, 'reason'],
    ] as const) {
      const res = await correct(orgId, { ...body, ...bad }, op);
      expect(res.status, `${JSON.stringify(bad)}: ${res.text}`).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', field]);
    }
    expect((await correct(orgId, { amount_usd: 1, day }, op)).body.detail[0].loc).toEqual(['body', 'reason']);
    expect((await correct(orgId, { ...body, extra: 1 }, op)).status).toBe(422);

    const ok = await correct(orgId, body, op);
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body).toEqual({
      success: true,
      id: expect.stringMatching(/^corr_[0-9a-f]{32}$/),
      org_id: orgId,
      user_id: 'corr-member',
      day,
      amount_usd: -1.25,
      reason: 'outage credit, ticket 812',
      created_at: expect.any(String),
    });
    // The same correction again is 409: counted once, never edited.
    const again = await correct(orgId, body, op);
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain(ok.body.id);
    // The organization's own (no user), with an Idempotency-Key: a repeat answers the first answer.
    const idem = randomUUID();
    const orgWide = { amount_usd: 2.000001, day, reason: 'org-wide adjustment' };
    const a = await correct(orgId, orgWide, op, idem);
    expect(a.status, a.text).toBe(201);
    const b = await correct(orgId, orgWide, op, idem);
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.text).toBe(a.text);
    // Another organization is untouched by either.
    expect((await correct(strangerOrg, { ...orgWide, reason: 'x' }, { key: strangerKey, headers: {} })).status).toBe(
      403,
    );

    // The day's totals: the organization's hold both, the member's only theirs.
    const q = `/api/v1/usage?from=${day}&to=${day}`;
    const org = await ops.stack.call('GET', q, { key });
    expect(org.status, org.text).toBe(200);
    expect(org.body.items).toEqual([
      expect.objectContaining({ day, correction_usd: 0.750001, total_cost_usd: 0.750001 }),
    ]);
    const perUser = await ops.stack.call('GET', `${q}&group_by=user`, { key });
    expect(perUser.body.items).toEqual([
      expect.objectContaining({ user_id: 'corr-member', correction_usd: -1.25, total_cost_usd: -1.25 }),
    ]);
    const own = await ops.stack.call('GET', q, { key: memberKey });
    expect(own.body.total).toMatchObject({ correction_usd: -1.25 });
    const stranger = await ops.stack.call('GET', q, { key: strangerKey });
    expect(stranger.body.total).toMatchObject({ correction_usd: 0, total_cost_usd: 0 });
    // Audited, naming the operator.
    const log = await ops.stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, op);
    const audited = log.body.items.filter((e: { action: string }) => e.action === 'correction_recorded');
    expect(audited.map((e: { detail: string }) => e.detail).sort()).toEqual([
      `+2.000001 USD on ${day}: org-wide adjustment`,
      `-1.25 USD on ${day}: outage credit, ticket 812`,
    ]);
    expect(audited.every((e: { actor: string }) => e.actor.startsWith('operator:'))).toBe(true);

    // The FOCUS export of that day: each its own line, an Adjustment, ChargeClass Correction (written after
    // its billing period ended), invoiced in this month.
    const res = await ops.stack.call('POST', '/api/v1/admin/billing/exports', { ...op, body: { from: day, to: day } });
    expect(res.status, res.text).toBe(200);
    const rows = csvRecords(readFileSync(res.body.location, 'utf8')).filter((r) => r.BillingAccountId === orgId);
    expect(rows.map((r) => [r.SubAccountId, r.BilledCost, r.ChargeCategory, r.ChargeClass]).sort()).toEqual([
      [null, '2.000001', 'Adjustment', 'Correction'],
      ['corr-member', '-1.250000', 'Adjustment', 'Correction'],
    ]);
    for (const r of rows) {
      expect(r.ChargePeriodStart).toBe(`${day}T00:00:00Z`);
      expect(r.BillingPeriodStart).toBe(first.toISOString().replace('.000', ''));
      expect(r.ChargeDescription).toMatch(/^Correction: /);
      expect(r.ConsumedQuantity).toBeNull();
    }
  }, 60_000);
});

describe('prepaid credits', () => {
  it('usage debits the balance; at zero a start is 402 credits_exhausted and a running sandbox pauses at its heartbeat', async () => {
    const key = await ops.stack.newUser('prepaid-owner');
    const orgId = await ops.stack.orgOf(key);
    await ops.stack.putOnPlan('prepaid-owner', 'prepaid', key);
    // No credits yet: a prepaid plan runs nothing.
    const none = await ops.stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=never-checks-in', { key });
    expect(none.status, none.text).toBe(402);
    expect(none.body).toEqual({ detail: expect.any(String), code: 'credits_exhausted', limit: 0, used: 0 });
    const op = await operator();
    expect((await grant(orgId, { amount_usd: 0.04 }, op)).body).toMatchObject({ prepaid: true, balance_usd: 0.04 });

    // A RUNNING sandbox (checked in as its program would), billed an hour: 0.0395 USD of 0.04.
    const started = await ops.stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=never-checks-in', { key });
    expect(started.status, started.text).toBe(200);
    const id = started.body.id as string;
    const token = await waitFor('the enrollment token', () => {
      const pid = sandboxPids(id)[0];
      return pid ? processEnv(pid)?.ENROLLMENT_TOKEN : undefined;
    });
    const checkIn = await ops.stack.call('POST', `/api/v1/sandboxes/${id}/bridge/check-in`, {
      key: token,
      body: { version: 'test' },
    });
    expect(checkIn.status, checkIn.text).toBe(200);
    const sandboxes = new DynamoSandboxStore();
    const warn = vi.spyOn(logger, 'warn').mockImplementation(() => {});
    let rec = (await sandboxes.get(id))!;
    const t0 = Date.parse(rec.runningAt!);
    expect(await ops.stack.services.sandboxBridge.meter(rec, new Date(t0 + 3600_000))).toBe(false);
    const usage = await ops.stack.call('GET', '/api/v1/usage', { key });
    expect(usage.body.limits).toMatchObject({
      plan: 'prepaid',
      prepaid: true,
      credits: { total_granted_usd: 0.04, spent_usd: 0.0395, balance_usd: 0.0005 },
    });
    expect(thresholdLines(warn).map((n) => `${n.limit}@${n.threshold}`)).toEqual(['credits@80']);
    // Two conversations of the owner: one on this sandbox, one not.
    const conversations = new DynamoConversationStore();
    const onIt = randomUUID().replaceAll('-', '');
    const elsewhere = randomUUID().replaceAll('-', '');
    for (const [cid, sandboxId] of [
      [onIt, id],
      [elsewhere, null],
    ] as const)
      expect(
        await conversations.create(
          conversationRecord('prepaid-owner', {
            id: cid,
            createdAt: rec.runningAt!,
            updatedAt: rec.runningAt!,
            sandbox_id: sandboxId,
          }),
        ),
      ).toBe(true);
    const events = new DynamoEventStore();
    const ref = (conversationId: string) => ({ userId: 'prepaid-owner', conversationId });
    // The agent had posted two events already.
    await events.append(ref(onIt), 1, [
      { kind: 'MessageEvent', id: 'm-1', timestamp: rec.runningAt!, source: 'agent' },
      { kind: 'MessageEvent', id: 'm-2', timestamp: rec.runningAt!, source: 'agent' },
    ] as AgentEventEnvelope[]);
    // 60 s more (0.000658 USD) spends the rest: the heartbeat pauses the sandbox and the notice says exhausted.
    rec = (await sandboxes.get(id))!;
    expect(await ops.stack.services.sandboxBridge.meter(rec, new Date(t0 + 3660_000))).toBe(true);
    // Its conversation says why, after what the agent posted: which limit, what was used, the limit.
    const told = (await events.query(ref(onIt), { descending: false, limit: 10 })).items;
    expect(told.map((e) => e.id)).toEqual(['m-1', 'm-2', `limit-${id}-1`]);
    expect(told[2]).toMatchObject({
      kind: 'ConversationErrorEvent',
      source: 'environment',
      code: 'credits_exhausted',
      limit: 0.04,
      used: 0.040158,
      detail: expect.stringMatching(/^Paused: .*prepaid credits are spent/),
    });
    // Over HTTP too, as the owner reads it; the other conversation is told nothing.
    const search = await ops.stack.call(
      'GET',
      `/api/v1/events/search?conversation_id__eq=${onIt}&kind__eq=ConversationErrorEvent`,
      {
        key,
      },
    );
    expect(search.status, search.text).toBe(200);
    expect(JSON.stringify(search.body)).toContain('credits_exhausted');
    expect(await events.lastSeq(ref(elsewhere))).toBe(0);
    // The next heartbeat of the paused sandbox pauses nothing and says nothing again.
    expect(await ops.stack.services.sandboxBridge.meter((await sandboxes.get(id))!, new Date(t0 + 3720_000))).toBe(
      false,
    );
    expect(await events.lastSeq(ref(onIt))).toBe(3);
    expect(thresholdLines(warn).map((n) => `${n.limit}@${n.threshold}`)).toEqual(['credits@80', 'credits@100']);
    const paused = (await sandboxes.get(id))!;
    expect(paused.status).toBe('PAUSED');
    expect(paused.detail).toMatch(/prepaid credits are spent/);
    const refused = await ops.stack.call('POST', `/api/v1/sandboxes/${id}/resume`, { key });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'credits_exhausted', limit: 0.04, used: 0.040158 });
    // A top-up lets it resume.
    await grant(orgId, { amount_usd: 1 }, op);
    const resumed = await ops.stack.call('POST', `/api/v1/sandboxes/${id}/resume`, { key });
    expect(resumed.status, resumed.text).toBe(200);
    await ops.stack.call('DELETE', `/api/v1/sandboxes/${id}`, { key });
  }, 60_000);
});

describe('GET /api/v1/usage?group_by=conversation', () => {
  it("pages the caller's conversations with the cost their metrics keep; another user's never show", async () => {
    const key = await ops.stack.newUser('conv-usage');
    const store = new DynamoConversationStore();
    const today = new Date().toISOString().slice(0, 10);
    const conversation = (userId: string, i: number, updatedAt: string): ConversationRecord =>
      conversationRecord(userId, {
        id: `${userId.replace(/[^a-z]/g, '')}${String(i).padStart(4, '0')}`.padEnd(32, '0'),
        createdAt: updatedAt,
        updatedAt,
        title: `c${i}`,
        metrics: {
          accumulated_cost: i / 1000,
          prompt_tokens: 100 * i,
          completion_tokens: 10 * i,
          max_budget_per_task: null,
        },
      });
    const at = (s: number) => new Date(Date.now() - s * 1000).toISOString();
    for (let i = 1; i <= 5; i++) expect(await store.create(conversation('conv-usage', i, at(100 - i)))).toBe(true);
    // Outside the range: updated 40 days ago.
    expect(await store.create(conversation('conv-usage', 9, at(40 * 86_400)))).toBe(true);
    await ops.stack.newUser('conv-other');
    expect(await store.create(conversation('conv-other', 7, at(10)))).toBe(true);

    const from = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
    const q = `/api/v1/usage?group_by=conversation&from=${from}&to=${today}&limit=2`;
    const seen: { conversation_id: string; title: string; reported_llm_cost_usd: number }[] = [];
    let page = await ops.stack.call('GET', q, { key });
    expect(page.status, page.text).toBe(200);
    expect(page.body.items[0]).toEqual({
      conversation_id: expect.any(String),
      title: 'c5',
      created_at: expect.any(String),
      updated_at: expect.any(String),
      reported_llm_cost_usd: 0.005,
      reported_llm_input_tokens: 500,
      reported_llm_output_tokens: 50,
    });
    for (;;) {
      seen.push(...page.body.items);
      if (!page.body.next_page_id) break;
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      page = await ops.stack.call('GET', `${q}&page_id=${page.body.next_page_id}`, { key });
      expect(page.status, page.text).toBe(200);
    }
    // Newest first, each once, none of the other user's, none outside the range.
    expect(seen.map((c) => c.title)).toEqual(['c5', 'c4', 'c3', 'c2', 'c1']);
    // The cursor is this caller's and this range's.
    const first = await ops.stack.call('GET', q, { key });
    const otherKey = await ops.stack.newUser('conv-thief');
    expect((await ops.stack.call('GET', `${q}&page_id=${first.body.next_page_id}`, { key: otherKey })).status).toBe(
      400,
    );
    expect(
      (
        await ops.stack.call(
          'GET',
          `${q.replace(`from=${from}`, `from=${today}`)}&page_id=${first.body.next_page_id}`,
          {
            key,
          },
        )
      ).status,
    ).toBe(400);
    // Other groupings carry no cursor.
    expect((await ops.stack.call('GET', '/api/v1/usage', { key })).body.next_page_id).toBeNull();
  });
});
