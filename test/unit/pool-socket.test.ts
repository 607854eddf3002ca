import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { CommandPush } from '#shared/sandboxes/command-push.ts';
import { POOL_WAKE } from '#shared/sandboxes/pool-claim.ts';
import { WarmPool, type WarmPoolDeps } from '#shared/sandboxes/pool.ts';
import type { PoolStore, StandbyPatch, StandbyRecord } from '#shared/sandboxes/pool-store.ts';
import { sha256 } from '#shared/sandboxes/lifecycle.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import type { ServiceContext } from '#shared/services.ts';
import { warmPoolDeps } from '#shared/services/warm-pool-deps.ts';

/*
 * The pool socket's server side (docs/architecture.md, "The warm pool"): `$connect` records a standby's
 * connection only for its own pool credential while it is ready, and the claim wakes the claimed standby
 * there, a failed wake-up failing no claim. The AWS path runs in test/tier/warm-pool.test.ts; this pins the
 * rules on a store in memory.
 */
const SPEC: SandboxSpec = {
  id: 'default',
  command: null,
  created_at: '2026-01-01T00:00:00Z',
  initial_env: {},
  working_dir: '/workspace',
  cpu: null,
  memory: null,
  warmPool: { size: 2, idleMinutes: 30, spot: false },
};
const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .publicKey.export({ type: 'spki', format: 'pem' })
  .toString();

/** Conditional writes as DynamoDbPoolStore makes them: on the version, and for a claim on `ready` + a fresh heartbeat. */
class MemoryPoolStore implements Partial<PoolStore> {
  readonly items = new Map<string, StandbyRecord>();
  async getStandby(id: string) {
    const r = this.items.get(id);
    return r && { ...r };
  }
  async listStandbys() {
    return [...this.items.values()].map((r) => ({ ...r }));
  }
  async updateStandby(
    id: string,
    expected: number | undefined,
    patch: StandbyPatch,
    claimable?: { heardAfter: string },
  ) {
    const r = this.items.get(id);
    if (!r || (expected !== undefined && r.version !== expected)) return undefined;
    if (claimable && (r.status !== 'ready' || (r.heartbeatAt ?? '') <= claimable.heardAfter)) return undefined;
    const next = { ...r, version: r.version + 1 } as Record<string, unknown>;
    for (const [k, v] of Object.entries(patch))
      if (v === null) delete next[k];
      else if (v !== undefined) next[k] = v;
    this.items.set(id, next as unknown as StandbyRecord);
    return { ...(next as unknown as StandbyRecord) };
  }
  async touchPool() {}
  async suspension() {
    return undefined;
  }
  async removeStandby(id: string) {
    this.items.delete(id);
  }
}

function standby(id: string, token: string, extra: Partial<StandbyRecord> = {}): StandbyRecord {
  const now = new Date().toISOString();
  return {
    id,
    specId: 'default',
    poolSpec: 'default',
    status: 'ready',
    version: 2,
    createdAt: now,
    updatedAt: now,
    heartbeatAt: now,
    tokenHash: sha256(token),
    publicKey: PEM,
    ref: `task-${id}`,
    revision: 'r1',
    capacity: 'FARGATE',
    ...extra,
  };
}

const A = `sb_${'a'.repeat(32)}`;
const B = `sb_${'b'.repeat(32)}`;

function pool(push: CommandPush | null) {
  const store = new MemoryPoolStore();
  const stopped: string[] = [];
  const deps = {
    store,
    specs: { list: () => [SPEC], get: () => SPEC, defaultSpec: () => SPEC },
    config: { pollMaxSeconds: 10, pollIntervalMs: 1000, startTimeoutSeconds: 600 },
    refill: null,
    deadline: null,
    push,
    runtime: {
      standbys: {
        revision: () => 'r1',
        capacity: () => 'FARGATE',
        coldReason: () => undefined,
        bindingPaths: () => undefined,
        startStandby: async () => ({ ref: 'x' }),
        bindStandby: async (_id: string, ref: string) => ({ ref, state: {} }),
        stopStandby: async (id: string) => void stopped.push(id),
      },
    },
  } as unknown as WarmPoolDeps;
  return { store, stopped, warmPool: new WarmPool(deps) };
}

const start = {
  sandboxId: 's1',
  userId: 'u1',
  spec: SPEC,
  generation: 1,
  enrollmentToken: 'enr',
  bridgeUrl: 'https://x',
};

describe('the pool socket: $connect', () => {
  it("records the connection for the standby's own pool credential while it is ready, and nothing else", async () => {
    const { store, warmPool } = pool(null);
    store.items.set(A, standby(A, 'pool_a'));
    store.items.set(B, standby(B, 'pool_b'));
    store.items.set(`sb_${'c'.repeat(32)}`, standby(`sb_${'c'.repeat(32)}`, 'pool_c', { status: 'booting' }));
    // Another standby's id with this credential, no credential, a malformed id, a standby not yet checked in.
    expect(await warmPool.connectSocket(B, 'pool_a', 'conn-x')).toBe(false);
    expect(await warmPool.connectSocket(A, undefined, 'conn-x')).toBe(false);
    expect(await warmPool.connectSocket('sb_../x', 'pool_a', 'conn-x')).toBe(false);
    expect(await warmPool.connectSocket(`sb_${'c'.repeat(32)}`, 'pool_c', 'conn-x')).toBe(false);
    expect(store.items.get(B)!.connectionId).toBeUndefined();
    expect(await warmPool.connectSocket(A, 'pool_a', 'conn-a')).toBe(true);
    expect(store.items.get(A)!.connectionId).toBe('conn-a');
    // A reconnect (before API Gateway's 2-hour close) replaces it.
    expect(await warmPool.connectSocket(A, 'pool_a', 'conn-a2')).toBe(true);
    expect(store.items.get(A)!.connectionId).toBe('conn-a2');
  });

  it('refuses a claimed or delivered standby (its credential gone with the binding)', async () => {
    const { store, warmPool } = pool(null);
    store.items.set(A, standby(A, 'pool_a', { status: 'claimed' }));
    expect(await warmPool.connectSocket(A, 'pool_a', 'conn-a')).toBe(false);
    store.items.set(A, { ...standby(A, 'pool_a', { status: 'delivered' }), tokenHash: undefined });
    expect(await warmPool.connectSocket(A, 'pool_a', 'conn-a')).toBe(false);
  });
});

describe('the pool socket: the claim wakes the standby', () => {
  it('pushes {"fetch":true} to the claimed standby\'s connection, never the binding', async () => {
    const sent: [string, string][] = [];
    const { store, warmPool } = pool({
      send: async (c, m) => {
        sent.push([c, m]);
        return true;
      },
    });
    store.items.set(A, standby(A, 'pool_a', { connectionId: 'conn-a' }));
    const claimed = await warmPool.claim(start);
    expect(claimed).toMatchObject({ standbyId: A });
    expect(sent).toEqual([['conn-a', POOL_WAKE]]);
    expect(JSON.parse(POOL_WAKE)).toEqual({ fetch: true });
  });

  it('a wake-up that fails (gone, or the push refused) fails no claim; without a connection nothing is pushed', async () => {
    for (const push of [
      { send: async () => false },
      {
        send: async () => {
          throw Object.assign(new Error('User is not authorized to perform: execute-api:ManageConnections'), {
            name: 'AccessDeniedException',
          });
        },
      },
    ] satisfies CommandPush[]) {
      const { store, stopped, warmPool } = pool(push);
      store.items.set(A, standby(A, 'pool_a', { connectionId: 'conn-a' }));
      expect(await warmPool.claim(start)).toMatchObject({ standbyId: A });
      expect(store.items.get(A)!.status).toBe('claimed');
      expect(stopped).toEqual([]);
    }
    const sent: string[] = [];
    const { store, warmPool } = pool({
      send: async (c) => {
        sent.push(c);
        return true;
      },
    });
    store.items.set(A, standby(A, 'pool_a'));
    expect(await warmPool.claim(start)).toMatchObject({ standbyId: A });
    expect(sent).toEqual([]);
  });
});

describe("the pool's claimers: who wakes and who sets off a deadline", () => {
  it("a start and the sweeper's retried start both wake the standby; only a start sets off the binding deadline", () => {
    const push = { send: async () => true } satisfies CommandPush;
    const deadline = { schedule: async () => {} };
    const c = { adapters: { commandPush: push, poolDeadline: deadline } } as unknown as ServiceContext;
    expect(warmPoolDeps(c, 'start')).toMatchObject({ push, deadline });
    expect(warmPoolDeps(c, 'retry')).toMatchObject({ push, deadline: null });
    // The standbys' own routes, refill and sweep claim nothing.
    expect(warmPoolDeps(c)).toMatchObject({ push: null, deadline: null });
  });
});
