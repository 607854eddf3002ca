import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import type { Caller } from '#shared/accounts/organizations.ts';
import { isLive } from '#shared/sandboxes/model.ts';
import { DynamoPoolStore } from '#shared/sandboxes/dynamo-pool-store.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { sha256 } from '#shared/sandboxes/lifecycle.ts';
import { poolRecordId, type StandbyRecord } from '#shared/sandboxes/pool-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { processEnv, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/*
 * The local warm pool over real HTTP: standbys are real sandbox programs (child processes) waiting on
 * their pool routes; a start claims one, renames its directory into the sandbox's and pushes the
 * binding, which the program exchanges at the sandbox's check-in. Two specs: `pool-one` (size 1, the
 * default) and `pool-race`, whose cold starts only sleep (its standbys run the program), so the race
 * of 50 starts costs 45 `sleep`s rather than 45 agents.
 */

let stack: TestStack;
/** While this file exists, new pool-race standbys only sleep (never ready): the race sees exactly its 5. */
let raceFlag: string;
const pools = () => new DynamoPoolStore();

const ready = (specId: string, count = 1) =>
  waitFor(
    `${count} ready standby(s) of ${specId}`,
    async () => {
      const list = (await pools().listStandbys(specId)).filter((s) => s.status === 'ready');
      return list.length >= count ? list : undefined;
    },
    { timeoutMs: 30_000 },
  );

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'acs-pool-specs-'));
  const specsFile = join(dir, 'specs.json');
  raceFlag = join(dir, 'race-started');
  const base = { created_at: '2025-11-01T00:00:00Z', initial_env: {}, working_dir: '/workspace' };
  writeFileSync(
    specsFile,
    JSON.stringify([
      { ...base, id: 'pool-one', command: ['node', '{sandbox_program}'], warmPool: { size: 1, idleMinutes: 30 } },
      {
        ...base,
        id: 'pool-race',
        command: [
          'sh',
          '-c',
          'if [ -n "$STANDBY_ID" ] && [ ! -e "$2" ]; then exec "$0" "$1"; else exec sleep 300; fi',
          process.execPath,
          '{sandbox_program}',
          join(dir, 'race-started'),
        ],
        warmPool: { size: 5, idleMinutes: 30 },
      },
    ]),
  );
  stack = await startTestStack({
    specsFile,
    // The race's flag file must be visible to the spec's shell, which bubblewrap would hide.
    containment: 'none',
    warmPoolSize: undefined,
    sweepIntervalMs: 3_600_000,
    sandboxes: { maxRunning: 50 },
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

describe('the local warm pool', () => {
  it('serves a start from a standby: RUNNING through the pushed binding, phases recorded, the pool refilled', async () => {
    const [standby] = await ready('pool-one');
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('STARTING');
    const running = await waitForSandboxStatus(stack, res.body.id, 'RUNNING');
    const phases = running.start_phases!;
    expect(phases).toMatchObject({ warm: true });
    expect(phases.cold_reason).toBeUndefined();
    expect(phases.claimed_at! >= phases.requested_at).toBe(true);
    expect(typeof phases.claim_ms).toBe('number');
    expect(typeof phases.check_in_ms).toBe('number');
    expect(phases.total_ms).toBeGreaterThanOrEqual(phases.check_in_ms!);
    // The standby's directory became the sandbox's; its process is the sandbox's instance.
    expect(existsSync(join(stack.dataDir, 'pool', standby!.id))).toBe(false);
    expect(existsSync(join(stack.dataDir, 'sandboxes', res.body.id, 'workspace'))).toBe(true);
    const rec = await new DynamoSandboxStore().get(res.body.id);
    expect(rec!.runtimeRef).toBe(standby!.ref);
    expect(rec!.runtimeState?.standby).toBeUndefined();
    // Claimed and delivered: its credential is gone, it never returns to the pool.
    const claimed = await pools().getStandby(standby!.id);
    expect(claimed).toMatchObject({ status: 'delivered', sandboxId: res.body.id, generation: 1 });
    expect(claimed!.tokenHash).toBeUndefined();
    // The refill after the claim: a new standby, not the claimed one.
    const [next] = await ready('pool-one');
    expect(next!.id).not.toBe(standby!.id);
  });

  it("takes the organization's running slot at the claim as a cold start does (standbys take none) and bills from the claim", async () => {
    const [standby] = await ready('pool-one');
    const key = await stack.newUser('pool-slot');
    const store = new DynamoSandboxStore();
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one', { key });
    expect(res.status).toBe(200);
    const rec = (await store.get(res.body.id))!;
    expect(rec.phases?.warm).toBe(true);
    // The standbys waiting in the pool hold no slot of anyone's: this organization's only slot is this sandbox's.
    expect(await store.runningOf(rec.orgId!)).toBe(1);
    const running = await waitForSandboxStatus(stack, res.body.id, 'RUNNING', key);
    // Billing starts at the claim, not while the standby waited nor at its acknowledged binding.
    const after = (await store.get(res.body.id))!;
    expect(after.runningAt).toBe(running.start_phases!.claimed_at);
    const record = await stack.services.sandboxBridge.accrue(after, new Date(Date.parse(after.runningAt!) + 5_000));
    expect(record).toMatchObject({ sandboxId: res.body.id, from: after.runningAt, seconds: 5 });
    // The standby's time in the pool (from its start) is not the user's: billing begins after it.
    expect(rec.runtimeState?.standby).toBe(standby!.id);
    expect(after.runningAt! > standby!.createdAt).toBe(true);
    expect((await stack.call('DELETE', `/api/v1/sandboxes/${res.body.id}`, { key })).status).toBe(200);
    await waitFor('the slot to be given back', async () =>
      (await store.runningOf(rec.orgId!)) === 0 ? true : undefined,
    );
  });

  it('starts cold, with the reason, what a standby cannot serve (a local resume: its workspace exists)', async () => {
    await ready('pool-one');
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one');
    await waitForSandboxStatus(stack, res.body.id, 'RUNNING');
    expect((await stack.call('POST', `/api/v1/sandboxes/${res.body.id}/pause`)).status).toBe(200);
    await waitForSandboxStatus(stack, res.body.id, 'PAUSED');
    await ready('pool-one');
    expect((await stack.call('POST', `/api/v1/sandboxes/${res.body.id}/resume`)).status).toBe(200);
    const resumed = await waitForSandboxStatus(stack, res.body.id, 'RUNNING');
    expect(resumed.start_phases!.warm).toBe(false);
    expect(resumed.start_phases!.cold_reason).toMatch(/workspace is a directory here already/);
    expect(typeof resumed.start_phases!.run_task_ms).toBe('number');
    expect(typeof resumed.start_phases!.check_in_ms).toBe('number');
    // The idle standby was left for the next new sandbox.
    expect((await pools().listStandbys('pool-one')).filter((s) => s.status === 'ready')).toHaveLength(1);
  });

  it('a standby that does not take its binding within 10 s is stopped, and the sweep starts the sandbox cold', async () => {
    const [standby] = await ready('pool-one');
    const pid = Number(standby!.ref);
    process.kill(pid, 'SIGSTOP');
    try {
      const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one');
      expect(res.status).toBe(200);
      const rec = await new DynamoSandboxStore().get(res.body.id);
      expect(rec!.runtimeState?.standby).toBe(standby!.id);
      // Within the 10 s nothing changes; after them the sweep starts it cold as a new generation.
      expect((await stack.services.sandboxHousekeeping.sweep(new Date(Date.now() + 5_000))).retried).toEqual([]);
      const sweep = await stack.services.sandboxHousekeeping.sweep(new Date(Date.now() + 11_000));
      expect(sweep.retried).toEqual([res.body.id]);
      const after = await new DynamoSandboxStore().get(res.body.id);
      expect(after!.generation).toBe(2);
      expect(after!.detail).toMatch(/Starting cold: the claimed standby did not take its binding within 10 s/);
      const running = await waitForSandboxStatus(stack, res.body.id, 'RUNNING');
      expect(running.start_phases).toMatchObject({ warm: false });
      expect(running.start_phases!.cold_reason).toMatch(/did not take its binding/);
      await waitFor('the unresponsive standby to be gone', () => (processEnv(pid) ? undefined : true), {
        timeoutMs: 15_000,
      });
    } finally {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
    }
  });

  it('drains after idleMinutes without a start, tops up after a start, and replaces a standby that died', async () => {
    await ready('pool-one');
    // The last start of pool-one was 31 minutes ago (its idleMinutes is 30).
    const longAgo = new Date(Date.now() - 31 * 60_000).toISOString();
    await documentClient().send(
      new UpdateCommand({
        TableName: tableName('pool'),
        Key: { id: poolRecordId('pool-one') },
        UpdateExpression: 'SET lastStartAt = :t',
        ExpressionAttributeValues: { ':t': longAgo },
      }),
    );
    const drained = await stack.services.warmPool.sweep(new Date());
    expect(drained.drained.length).toBeGreaterThanOrEqual(1);
    expect(drained.started).toEqual([]);
    expect(drained.lost).toEqual([]);
    await waitFor('pool-one to be empty', async () =>
      (await pools().listStandbys('pool-one')).every((s) => s.status === 'delivered') ? true : undefined,
    );
    // The next start is cold (nothing ready) and brings the pool back.
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one');
    const running = await waitForSandboxStatus(stack, res.body.id, 'RUNNING');
    expect(running.start_phases!.cold_reason).toBe('no standby was ready');
    const [back] = await ready('pool-one');
    // A standby that dies leaves the pool, and the sweep tops the pool up again.
    process.kill(Number(back!.ref), 'SIGKILL');
    await waitFor('the dead standby to leave the pool', async () =>
      (await pools().getStandby(back!.id)) ? undefined : true,
    );
    const topUp = await stack.services.warmPool.sweep(new Date());
    expect(topUp.started).toHaveLength(1);
    await ready('pool-one');
  });

  it('a standby of an old revision (the spec changed since it started: a deploy) is drained by the sweep and one of the current revision started', async () => {
    const [old] = await ready('pool-one');
    const current = old!.revision;
    const pid = Number(old!.ref);
    // As if it had been started before the spec changed: its item names another revision.
    await waitFor('the standby marked with an old revision', async () => {
      const rec = await pools().getStandby(old!.id);
      return rec && (await pools().updateStandby(rec.id, rec.version, { revision: 'before-the-deploy' }));
    });
    const sweep = await stack.services.warmPool.sweep(new Date());
    expect(sweep.drained).toEqual([old!.id]);
    expect(sweep.lost).toEqual([]);
    expect(sweep.started).toHaveLength(1);
    // Drained: its item gone, its process stopped, its pool directory removed.
    expect(await pools().getStandby(old!.id)).toBeUndefined();
    await waitFor('the old standby to be stopped', () => (processEnv(pid) ? undefined : true), { timeoutMs: 15_000 });
    expect(existsSync(join(stack.dataDir, 'pool', old!.id))).toBe(false);
    // Its replacement runs the spec as it is now.
    const [next] = await ready('pool-one');
    expect(next!.id).toBe(sweep.started[0]);
    expect(next!.revision).toBe(current);
    // A standby of the current revision is kept by the next sweep.
    expect((await stack.services.warmPool.sweep(new Date())).drained).toEqual([]);
  });

  it("a claim made after the wait call's credential check and before it waits is delivered by that call, not a poll interval later", async () => {
    // An item of a spec the server keeps no pool of (nothing refills, sweeps or claims it), no process behind it.
    const now = new Date().toISOString();
    const id = `sb_${'a'.repeat(32)}`;
    const base = { id, specId: 'pool-unlisted', poolSpec: 'pool-unlisted', version: 1, createdAt: now, updatedAt: now };
    await pools().createStandby({
      ...base,
      status: 'ready',
      heartbeatAt: now,
      tokenHash: sha256('pool_x'),
      publicKey: 'pem',
      revision: 'r',
      capacity: 'process',
    });
    try {
      // What the wait route's credential check read, then a claim: wait=0 (the socket's fetch) must take the binding.
      const checked = (await pools().getStandby(id))!;
      const binding = { sandbox_id: 'x'.repeat(32), generation: 1, enrollment_sealed: 'sealed', paths: null };
      await pools().updateStandby(id, checked.version, {
        status: 'claimed',
        sandboxId: binding.sandbox_id,
        generation: 1,
        binding: JSON.stringify(binding),
      });
      expect(await stack.services.warmPool.wait(checked, 0)).toEqual({ binding, stop: false });
      expect(await pools().getStandby(id)).toMatchObject({ status: 'delivered' });
    } finally {
      await pools().removeStandby(id);
    }
  });

  it('a pool credential reaches nothing but its own pool routes, and nothing once its binding is delivered', async () => {
    // A sandbox of another user's, RUNNING, for the bridge route attempts.
    await ready('pool-one');
    const victimKey = await stack.newUser('pool-victim');
    const victim = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one', { key: victimKey });
    await waitForSandboxStatus(stack, victim.body.id, 'RUNNING', victimKey);
    const id = victim.body.id;
    // The hostile standby: its credential as the program holds it (its environment).
    const [standby] = await ready('pool-one');
    const token = processEnv(Number(standby!.ref))?.POOL_TOKEN;
    expect(token).toMatch(/^pool_/);
    expect(sha256(token!)).toBe(standby!.tokenHash);
    const refused = [
      ['GET', '/api/settings'],
      ['GET', '/api/v1/users/me'],
      ['GET', '/api/v1/sandboxes/search'],
      ['GET', `/api/v1/sandboxes?id=${id}`],
      ['POST', '/api/v1/sandboxes'],
      ['GET', '/api/v1/app-conversations/search'],
      ['GET', `/api/v1/sandboxes/${id}/bridge/commands`],
      ['POST', `/api/v1/sandboxes/${id}/bridge/heartbeat`],
      ['POST', `/api/v1/sandboxes/${id}/bridge/check-in`],
      ['GET', `/api/v1/sandboxes/${id}/bridge/snapshots/current`],
      ['GET', `/api/v1/webhooks/${id}/conversations/${'0'.repeat(32)}/start-config`],
    ] as const;
    for (const [method, path] of refused) {
      const res = await stack.call(method, path, { key: token!, body: method === 'POST' ? {} : undefined });
      expect([401, 403], `${method} ${path}`).toContain(res.status);
    }
    // Another standby's routes (a made-up one, and a real one of another spec) refuse it too.
    const [other] = await ready('pool-race');
    for (const sid of [`sb_${'0'.repeat(32)}`, other!.id]) {
      expect((await stack.call('GET', `/api/v1/pool/standbys/${sid}/wait`, { key: token! })).status).toBe(401);
    }
    expect((await stack.call('GET', '/api/v1/pool/standbys/../wait', { key: token! })).status).toBe(404);
    // Its own wait answers (a heartbeat); a claim delivers the binding once and the credential dies with it.
    const own = await stack.call('GET', `/api/v1/pool/standbys/${standby!.id}/wait?wait=0`, { key: token! });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ binding: null, stop: false });
    const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one');
    await waitForSandboxStatus(stack, res.body.id, 'RUNNING');
    expect((await pools().getStandby(standby!.id))!.status).toBe('delivered');
    expect((await stack.call('GET', `/api/v1/pool/standbys/${standby!.id}/wait`, { key: token! })).status).toBe(401);
    expect(
      (await stack.call('POST', `/api/v1/pool/standbys/${standby!.id}/check-in`, { key: token!, body: {} })).status,
    ).toBe(401);
  });

  it('a suspended user or organization never claims a standby nor starts cold, while the authorizer still holds the account', async () => {
    const [standby] = await ready('pool-one');
    const accounts = new DynamoAccountStore();
    const sandboxes = new DynamoSandboxStore();
    for (const which of ['user', 'org'] as const) {
      const userId = `pool-suspended-${which}`;
      const key = await stack.newUser(userId);
      // The authorizer now holds the account, active, for its 30 s.
      const orgId = await stack.orgOf(key);
      // Suspended in the tables only: how another container's suspension looks to this one on AWS.
      if (which === 'user') {
        const user = (await accounts.getUser(userId))!;
        expect(await accounts.replaceUser({ ...user, status: 'suspended' })).toBe(true);
      } else {
        const org = (await accounts.getOrg(orgId))!;
        expect(await accounts.replaceOrg({ ...org, status: 'suspended' })).toBe(true);
      }
      const res = await stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-one', { key });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'PAUSED',
        detail: which === 'user' ? 'Paused: the account is suspended' : 'Paused: the organization is suspended',
      });
      // Nothing ran for it: no standby bound, no cold process, its running slot given back.
      const rec = (await sandboxes.get(res.body.id))!;
      expect(rec.runtimeRef).toBeUndefined();
      expect(rec.runtimeState?.standby).toBeUndefined();
      expect(await sandboxes.runningOf(orgId)).toBe(0);
      expect((await pools().getStandby(standby!.id))!.status).toBe('ready');
    }
  });

  it('starts racing a suspension of their user leave nothing live and no standby bound to the suspended account', async () => {
    await ready('pool-race', 5);
    const userId = 'pool-racing-suspended';
    const key = await stack.newUser(userId);
    await stack.orgOf(key);
    const operator: Caller = { userId: 'pool-operator', orgId: 'operators', role: 'owner', operator: true };
    const sandboxes = new DynamoSandboxStore();
    const starts = Array.from({ length: 10 }, () =>
      stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-race', { key }),
    );
    // The suspension lands while the starts are under way: once the first record exists.
    await waitFor(
      'a start under way',
      async () => ((await sandboxes.listLiveByUser(userId)).length ? true : undefined),
      {
        intervalMs: 1,
      },
    );
    const suspended = await stack.services.organizations.setUserStatus(operator, userId, true);
    expect(suspended.status).toBe('suspended');
    const ids = (await Promise.all(starts)).filter((r) => r.status === 200).map((r) => r.body.id as string);
    expect(ids.length).toBeGreaterThan(0);
    // Whatever the interleaving: refused at the claim, or paused by the suspension and its standby stopped.
    await waitFor(
      "nothing of the suspended user's running or bound",
      async () => {
        const recs = await Promise.all(ids.map((id) => sandboxes.get(id)));
        if (recs.some((r) => r && isLive(r.status))) return undefined;
        if (recs.some((r) => r?.runtimeRef && processEnv(Number(r.runtimeRef)))) return undefined;
        const bound = (await pools().listStandbys('pool-race')).filter((s) => ids.includes(s.sandboxId ?? ''));
        return bound.length ? undefined : true;
      },
      { timeoutMs: 30_000 },
    );
  }, 60_000);

  it('50 racing starts by 10 users on a pool of 5: 5 claims, 45 cold starts, no standby shared, 5 refilled', async () => {
    // The case before leaves standbys booting (its refills): settled here, so the race sees its 5 ready.
    await waitFor(
      'the pool settled at 5 ready standbys, none booting',
      async () => {
        await stack.services.warmPool.sweep(new Date());
        const list = await pools().listStandbys('pool-race');
        const count = (status: string) => list.filter((s) => s.status === status).length;
        return count('ready') === 5 && count('booting') === 0 ? true : undefined;
      },
      { timeoutMs: 30_000 },
    );
    // The refills the claims ask for start standbys that never become ready while the race runs.
    writeFileSync(raceFlag, '');
    const keys = await Promise.all(Array.from({ length: 10 }, (_, i) => stack.newUser(`racer-${i}`)));
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        stack.call('POST', '/api/v1/sandboxes?sandbox_spec_id=pool-race', { key: keys[i % 10]! }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const records = await Promise.all(results.map((r) => new DynamoSandboxStore().get(r.body.id)));
    const warm = records.filter((r) => r!.phases?.warm);
    const cold = records.filter((r) => r?.phases && !r.phases.warm);
    expect(warm).toHaveLength(5);
    expect(cold).toHaveLength(45);
    const standbys = warm.map((r) => r!.runtimeState?.standby ?? r!.runtimeRef);
    expect(new Set(standbys).size).toBe(5);
    expect(new Set(records.map((r) => r!.runtimeRef)).size).toBe(50);
    const claimedItems = (await pools().listStandbys('pool-race')).filter(
      (s: StandbyRecord) => s.status === 'claimed' || s.status === 'delivered',
    );
    expect(new Set(claimedItems.map((s) => s.sandboxId)).size).toBe(claimedItems.length);
    // Every start asked for a refill (50 refills racing): each new standby takes a free place of the
    // pool first, so between them they start exactly the 5 the claims took, never more.
    const waiting = async () =>
      (await pools().listStandbys('pool-race')).filter((s) => s.status === 'booting' || s.status === 'ready').length;
    await waitFor('the refills to start 5 standbys', async () => ((await waiting()) >= 5 ? true : undefined), {
      timeoutMs: 15_000,
    });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await waiting()).toBe(5);
    for (const r of warm) await waitForSandboxStatus(stack, r!.id, 'RUNNING', keys[Number(r!.userId.split('-')[1])]);
    for (const [i, r] of results.entries())
      await stack.call('DELETE', `/api/v1/sandboxes/${r.body.id}`, { key: keys[i % 10]! });
  }, 120_000);
});
