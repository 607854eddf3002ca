import { randomBytes } from 'node:crypto';
import { unauthorized } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import type { PoolBinding, PoolWaitResponse } from '#shared/protocol.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import { armSignal, commandQueued } from '#shared/sandboxes/command-signal.ts';
import { PoolClaims, wakeKey } from '#shared/sandboxes/pool-claim.ts';
import { hasPool, LOST_STANDBY_MS, type StandbyRecord } from '#shared/sandboxes/pool-store.ts';
import { newToken, sameHash, sha256 } from '#shared/sandboxes/lifecycle.ts';

export type { Claimed, PoolRefill, WarmPoolDeps } from '#shared/sandboxes/pool-claim.ts';

export interface PoolSweep {
  started: string[];
  drained: string[];
  lost: string[];
}

/**
 * The warm pool: per spec with `warmPool`, up to `size` standbys (the sandbox program started with
 * no user, waiting on its pool endpoints), claimed by starts they can serve. One code path for the
 * local process runtime and Fargate; what differs is the runtime's `standbys`. The design:
 * docs/architecture.md ("The warm pool").
 */ export class WarmPool extends PoolClaims {
  async admitted(standbyId: string, key: string | undefined): Promise<StandbyRecord | null> {
    if (!key) return null;
    const rec = await this.deps.store.getStandby(standbyId);
    return rec && sameHash(rec.tokenHash, sha256(key)) ? rec : null;
  }

  /**
   * The pool socket's `$connect` (AWS, the bridge socket with `?standby_id=`): the standby's own pool
   * credential, while it is `ready` (checked in), records the connection on its item with a
   * conditional write on the version it read, so a claim or drain meanwhile refuses it (the program
   * then long-polls and takes its binding or stop). The connection gets only the claim's wake-up
   * (`POOL_WAKE`): no sandbox's commands, since no sandbox records it.
   */
  async connectSocket(standbyId: string | undefined, key: string | undefined, connectionId: string): Promise<boolean> {
    if (!standbyId || !/^sb_[0-9a-f]{32}$/.test(standbyId)) return false;
    const rec = await this.admitted(standbyId, key);
    if (rec?.status !== 'ready') return false;
    const ok = Boolean(await this.deps.store.updateStandby(rec.id, rec.version, { connectionId }));
    if (ok) logger.info('pool.socket', { standbyId });
    return ok;
  }

  /** The standby checks in with its public key: `ready` from here, claimable while it keeps waiting. */
  async checkIn(
    standby: StandbyRecord | undefined,
    publicKey: string,
  ): Promise<{ standby_id: string; wait_seconds: number }> {
    if (!standby) throw unauthorized();
    if (standby.status === 'booting') {
      const updated = await this.deps.store.updateStandby(standby.id, standby.version, {
        status: 'ready',
        publicKey,
        heartbeatAt: this.now().toISOString(),
      });
      if (!updated) throw unauthorized();
    } else if (standby.status !== 'ready' || standby.publicKey !== publicKey) throw unauthorized();
    return { standby_id: standby.id, wait_seconds: this.deps.config.pollMaxSeconds };
  }

  /**
   * The standby's long-poll (each call is its heartbeat): its binding once claimed (delivered once:
   * the pool credential is removed with it, so the credential is worth nothing afterwards, even to
   * whatever the agent runs later), `stop` when drained, else nothing after `waitSeconds`.
   */
  async wait(standby: StandbyRecord | undefined, waitSeconds: number): Promise<PoolWaitResponse> {
    if (!standby) throw unauthorized();
    let rec: StandbyRecord | undefined = standby;
    const deadline = Date.now() + Math.min(waitSeconds, this.deps.config.pollMaxSeconds) * 1000;
    // Armed before anything is read: a claim's wake-up while this call reads or writes is kept, not
    // left to the next poll interval (a claim right after the standby checked in, before it waits).
    const wake = armSignal(wakeKey(rec.id));
    try {
      // The heartbeat holds only while `ready`: refused, the item changed since the caller's read (a
      // claim, a drain), so it is read again rather than waited on.
      if (rec.status === 'ready' && !(await this.deps.store.heartbeat(rec.id, this.now().toISOString())))
        rec = await this.deps.store.getStandby(rec.id);
      for (;;) {
        if (!rec || rec.status === 'draining' || rec.status === 'delivered') return { binding: null, stop: true };
        if (rec.status === 'claimed' && rec.binding) {
          // Delivered once: the write that takes the binding also removes the pool credential.
          const delivered = await this.deps.store.deliverBinding(rec.id);
          if (!delivered?.binding) return { binding: null, stop: true };
          return { binding: JSON.parse(delivered.binding) as PoolBinding, stop: false };
        }
        const left = deadline - Date.now();
        if (left <= 0) return { binding: null, stop: false };
        const woken = await wake.wait(Math.min(this.deps.config.pollIntervalMs, left));
        // Woken, most likely by its claim: the binding is taken in one write, without reading the item first.
        const delivered = woken ? await this.deps.store.deliverBinding(rec.id) : undefined;
        if (delivered?.binding) return { binding: JSON.parse(delivered.binding) as PoolBinding, stop: false };
        rec = await this.deps.store.getStandby(rec.id);
      }
    } finally {
      wake.close();
    }
  }

  /**
   * A standby's process or task ended: it leaves the pool (a bound one's sandbox is told by the runtime).
   * With `ref` (the task ARN of an ECS event), only if it is that item's task: the item is read by the
   * `startedBy` ECS keeps on every event of the task, one GetItem, and the ARN must match.
   */
  async standbyStopped(standbyId: string, ref?: string): Promise<StandbyRecord | undefined> {
    const rec = await this.deps.store.getStandby(standbyId);
    if (!rec || (ref !== undefined && rec.ref !== undefined && rec.ref !== ref)) return undefined;
    await this.deps.store.removeStandby(standbyId);
    return rec;
  }

  /**
   * Starts standbys until the spec's pool holds `size` (booting or ready, of the current revision),
   * unless no start came for `idleMinutes` (then the pool stays drained until one does). Each new
   * standby first takes a free place of the pool (`PoolRecord.slots`) in one conditional write, so
   * racing refills (one after each of many claims at once) start at most `size` between them.
   */
  async refill(specId: string): Promise<string[]> {
    const spec = this.deps.specs.get(specId);
    const standbys = this.deps.runtime.standbys;
    if (!spec || !hasPool(spec) || !standbys) return [];
    const pool = await this.deps.store.getPool(spec.id);
    if (!pool || this.idle(spec, pool.lastStartAt)) return [];
    const revision = standbys.revision(spec);
    const waiting = (await this.deps.store.listStandbys(spec.id)).filter(
      (s) => (s.status === 'booting' || s.status === 'ready') && s.revision === revision,
    );
    const waitingIds = new Set(waiting.map((s) => s.id));
    const holders = new Set(Object.values(pool.slots ?? {}));
    // Waiting standbys that hold no place (started before places existed) fill free places first.
    let unplaced = waiting.filter((s) => !holders.has(s.id)).length;
    const started: string[] = [];
    for (let slot = 0; slot < spec.warmPool!.size; slot++) {
      const holder = pool.slots?.[slot];
      if (holder && waitingIds.has(holder)) continue;
      if (unplaced > 0) {
        unplaced--;
        continue;
      }
      const id = await this.startStandby(spec, pool.bridgeUrl, { slot, holder });
      if (id) started.push(id);
    }
    return started;
  }

  /**
   * The per-minute sweep: forgets standbys that never checked in or stopped being heard from, drains
   * those of an old revision (a deploy), the surplus over `size`, and every one after `idleMinutes`
   * without a start; then tops up. Claimed standbys belong to their sandboxes and are left alone.
   */
  async sweep(now: Date = this.now()): Promise<PoolSweep> {
    const out: PoolSweep = { started: [], drained: [], lost: [] };
    const standbys = this.deps.runtime.standbys;
    if (!standbys) return out;
    const t = now.getTime();
    for (const spec of this.deps.specs.list()) {
      const all = await this.deps.store.listStandbys(spec.id);
      if (!hasPool(spec) && !all.length) continue;
      const pool = hasPool(spec) ? await this.deps.store.getPool(spec.id) : undefined;
      const idle = !pool || this.idle(spec, pool.lastStartAt, t);
      const revision = standbys.revision(spec);
      let kept = 0;
      for (const s of all) {
        try {
          const heard = Date.parse(s.heartbeatAt ?? s.createdAt);
          if (s.status === 'booting' && t - Date.parse(s.createdAt) > this.deps.config.startTimeoutSeconds * 1000) {
            await this.discard(s);
            out.lost.push(s.id);
          } else if (s.status === 'ready' && t - heard > LOST_STANDBY_MS) {
            await this.discard(s);
            out.lost.push(s.id);
          } else if (s.status === 'booting' || s.status === 'ready') {
            if (idle || s.revision !== revision || kept >= (spec.warmPool?.size ?? 0)) {
              if (await this.drain(s)) out.drained.push(s.id);
            } else kept++;
          } else if (s.status === 'draining') {
            await this.discard(s);
          }
        } catch (err) {
          logger.error('Pool sweep step failed', { standbyId: s.id, error: err as Error });
        }
      }
      if (!idle) out.started.push(...(await this.refill(spec.id)));
    }
    if (out.started.length || out.drained.length || out.lost.length) logger.info('pool.sweep', { ...out });
    return out;
  }

  /** Every standby stops (the local server's shutdown): nothing of the pool outlives it. */
  async drainAll(): Promise<void> {
    for (const spec of this.deps.specs.list())
      for (const s of await this.deps.store.listStandbys(spec.id))
        if (s.status !== 'claimed' && s.status !== 'delivered') await this.discard(s).catch(() => undefined);
  }

  /**
   * Opens the pools of every spec that has one as if a start had just come (the local server's
   * start, so a developer's first start is warm): each drains after `idleMinutes` without a start.
   */
  async open(bridgeUrl: string): Promise<string[]> {
    const started: string[] = [];
    for (const spec of this.deps.specs.list().filter(hasPool)) {
      await this.deps.store.touchPool(spec.id, this.now().toISOString(), bridgeUrl);
      started.push(...(await this.refill(spec.id)));
    }
    return started;
  }

  private idle(spec: SandboxSpec, lastStartAt: string, t = this.now().getTime()): boolean {
    return t - Date.parse(lastStartAt) > (spec.warmPool?.idleMinutes ?? 30) * 60_000;
  }

  /** A new standby in place `slot` of the pool, if that place is still `holder`'s when it takes it (else none). */
  private async startStandby(
    spec: SandboxSpec,
    bridgeUrl: string,
    place: { slot: number; holder: string | undefined },
  ): Promise<string | undefined> {
    const standbys = this.deps.runtime.standbys!;
    const id = `sb_${randomBytes(16).toString('hex')}`;
    const token = newToken('pool');
    const now = this.now().toISOString();
    await this.deps.store.createStandby({
      id,
      specId: spec.id,
      poolSpec: spec.id,
      status: 'booting',
      version: 1,
      createdAt: now,
      updatedAt: now,
      tokenHash: sha256(token),
      revision: standbys.revision(spec),
      capacity: standbys.capacity(spec),
    });
    // Written before the place is taken: a refill that reads the place as this one's then lists it waiting.
    if (!(await this.deps.store.takeSlot(spec.id, place.slot, place.holder, id))) {
      await this.deps.store.removeStandby(id);
      return undefined;
    }
    try {
      const { ref } = await standbys.startStandby({ standbyId: id, spec, poolToken: token, bridgeUrl });
      await this.deps.store.updateStandby(id, undefined, { ref });
      return id;
    } catch (err) {
      logger.warn('pool.start-failed', { specId: spec.id, error: err as Error });
      await this.deps.store.removeStandby(id);
      return undefined;
    }
  }

  /** Marks a standby draining (only if it is still unclaimed), stops it and forgets it. */
  private async drain(s: StandbyRecord): Promise<boolean> {
    const marked = await this.deps.store.updateStandby(s.id, s.version, { status: 'draining' });
    if (!marked) return false;
    commandQueued(wakeKey(s.id));
    await this.discard(marked);
    return true;
  }
}
