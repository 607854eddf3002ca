import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { conflict, notFound } from '#shared/http/errors.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import { logger } from '#shared/logging.ts';
import type { SpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';
import type { Plans } from '#shared/plans/model.ts';
import type { Prices } from '#shared/usage/prices.ts';
import { computeCharge } from '#shared/usage/prices.ts';
import type { UsageAlerts } from '#shared/usage/alerts.ts';
import type { PauseNotices } from '#shared/conversations/pause-notices.ts';
import type { ComputeRecord, DayTotals, UsageStore } from '#shared/usage/usage-store.ts';
import { StorageMeter } from '#shared/usage/storage.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import type { CommandPush } from '#shared/sandboxes/command-push.ts';
import type { SandboxConfig } from '#shared/sandboxes/config.ts';
import { isLive } from '#shared/sandboxes/model.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import {
  CAPACITY_STATE,
  SandboxStartError,
  type InstanceRef,
  type LaunchOptions,
  type RuntimeState,
  type SandboxRuntime,
} from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import type { SandboxPatch, SandboxRecord, SandboxStore, StartPhases } from '#shared/sandboxes/sandbox-store.ts';
import type { SnapshotRemoval } from '#shared/sandboxes/snapshots/snapshot-removal.ts';
import type { PoolClaims } from '#shared/sandboxes/pool-claim.ts';
import { hasPool } from '#shared/sandboxes/pool-store.ts';
import type { WorkspaceSnapshots } from '#shared/sandboxes/snapshots/workspace-snapshots.ts';

export interface SandboxServiceDeps {
  store: SandboxStore;
  runtime: SandboxRuntime;
  specs: SpecRegistry;
  /** Seals session keys and command payloads for the sandbox's owner. */
  sealer: Sealer;
  cursors: CursorCodec;
  config: SandboxConfig;
  /** The control-plane URL a sandbox calls, given the Host header of the request that starts it. */
  bridgeUrl: (host: string | undefined) => string;
  /** Workspace snapshots in S3 (AWS); null where workspaces are directories that stay (locally). */
  snapshots: WorkspaceSnapshots | null;
  /** Removes a deleted sandbox's snapshots (AWS); null where workspaces are directories (locally). */
  snapshotRemoval: SnapshotRemoval | null;
  /** The user's sandbox settings a start applies (images, resource factor); none when absent. */
  launchOptions?: (userId: string) => Promise<LaunchOptions>;
  /** Pushes queued commands to the program's socket (AWS); null where programs long-poll (locally). */
  commandPush: CommandPush | null;
  /** The plans (the per-organization running limit, the largest resource factor): read by starts and resumes only. */
  plans?: Plans;
  /** The usage ledger and compute prices: read by the heartbeat only. */
  usage?: UsageStore;
  prices?: Prices;
  /** 80% / 100% notices: the heartbeat's, where a record crosses a threshold (shared/usage/alerts.ts). */
  alerts?: UsageAlerts;
  /** The heartbeat's: tells a sandbox's conversations why it was paused at a hard limit (an event each). */
  pauseNotices?: PauseNotices;
  /** The warm pool a start claims from (used only for specs that keep one). */
  pool?: PoolClaims;
  now?: () => Date;
}

export interface SweepSummary {
  paused: string[];
  failed: string[];
  missing: string[];
  orphans: string[];
  deleted: string[];
  /** Starts tried again after throttling or missing capacity. */
  retried: string[];
  /** RUNNING sandboxes that stopped heartbeating, metered to their last sign of life. */
  metered: string[];
}

type Decision = SandboxPatch | 'skip';
interface Transition {
  record: SandboxRecord;
  previous: SandboxRecord;
  changed: boolean;
}

export const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
export const newToken = (prefix: string) => `${prefix}_${randomBytes(32).toString('base64url')}`;
export const sameHash = (stored: string | undefined, actual: string) =>
  stored !== undefined && stored.length === actual.length && timingSafeEqual(Buffer.from(stored), Buffer.from(actual));
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const instanceOf = (r: SandboxRecord): InstanceRef => ({
  sandboxId: r.id,
  generation: r.generation,
  ref: r.runtimeRef,
  state: r.runtimeState,
});
export const sameState = (a: RuntimeState | undefined, b: RuntimeState) =>
  JSON.stringify(a ?? {}) === JSON.stringify(b);

export const notLive = { liveShard: null, liveUserId: null, enrollmentHash: null } as const;
export const toError = (detail: string): SandboxPatch => ({ status: 'ERROR', detail, ...notLive });
export const toPaused = (detail?: string): SandboxPatch => ({ status: 'PAUSED', detail: detail ?? null, ...notLive });

/**
 * Whether a record holds one of its organization's running slots: live (STARTING/RUNNING), not being
 * deleted, and started since the per-organization limit exists (`orgId` set by the start or resume).
 */
export const holdsSlot = (r: SandboxRecord) => r.orgId !== undefined && isLive(r.status) && !r.deletedAt;

/** The size a sandbox without one (a local process) is metered at: 1 vCPU, 2 GiB (docs/billing.md). */
export const NOMINAL_SIZE = { cpu: 1024, memory: 2048 } as const;

/** A delete older than this that is still unfinished is retried by the sweeper. */
export const DELETE_RETRY_MS = 60_000;

/**
 * What a start that may be retried keeps in the record's runtime state: when the sweeper tries
 * again, how many attempts were made, the last error, and what the next attempt needs (the bridge
 * URL and the launch options, since the sweeper has no request and reads no settings).
 */
export const RETRY_STATE = {
  at: 'retryAt',
  attempt: 'retryAttempt',
  error: 'retryError',
  bridgeUrl: 'bridgeUrl',
  launch: 'launch',
} as const;
/** Where the record names the standby a start claimed (until it checks in, or is replaced by a cold start). */
export const STANDBY_STATE = 'standby';

/** Back-off between start attempts (the sweeper runs every minute, so later ones land on its ticks). */
export const retryDelayMs = (attempt: number) => Math.min(300_000, 30_000 * 2 ** (attempt - 1));

/**
 * The sandbox's state machine, which every audience's service shares (the user's API in service.ts, the
 * bridge in bridge-service.ts, housekeeping in housekeeping.ts): each holds one, over the same deps. The states: `STARTING -> RUNNING` (only when the program inside checks in),
 * `-> PAUSED` (asked for, idle, or over the per-user limit), `-> ERROR` (a crash, a failed or stuck
 * start), `-> MISSING` (RUNNING but its process or task is gone). Every change is one conditional
 * write on the record's version; the runtime is called after the write that decides, so two
 * racing calls can never leave two live processes for one sandbox.
 */
export class SandboxLifecycle {
  readonly now: () => Date;

  constructor(private readonly deps: SandboxServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  iso(): string {
    return this.now().toISOString();
  }

  /** The record a session key belongs to, in any state (so a stale program can be told to stop). */
  async keyOwner(sandboxId: string, key: string | undefined): Promise<SandboxRecord | null> {
    if (!key) return null;
    const rec = await this.deps.store.get(sandboxId);
    return rec && !rec.deletedAt && sameHash(rec.sessionKeyHash, sha256(key)) ? rec : null;
  }

  /**
   * Reads, decides and writes conditionally on the version read, retrying on a lost race. With
   * `userId`, an unknown, foreign or deleted sandbox is a 404; without, it is `undefined`. `known`: the
   * record as the caller just read or wrote it, decided on without a read first (a lost race reads).
   */
  async transition(
    id: string,
    decide: (rec: SandboxRecord) => Decision,
    options: { userId?: string; known?: SandboxRecord } = {},
  ): Promise<Transition | undefined> {
    let known = options.known;
    for (let attempt = 0; attempt < 40; attempt++) {
      const guessed = known !== undefined;
      const rec = known ?? (await this.deps.store.get(id));
      known = undefined;
      if (!rec || rec.deletedAt || (options.userId !== undefined && rec.userId !== options.userId)) {
        if (options.userId !== undefined) throw notFound('Sandbox not found');
        return undefined;
      }
      const patch = decide(rec);
      // Nothing to do, decided on a record not read here: confirmed on one read.
      if (patch === 'skip' && guessed) continue;
      if (patch === 'skip') return { record: rec, previous: rec, changed: false };
      const updated = await this.deps.store.update(id, rec.version, patch);
      if (updated) {
        await this.releaseIfLeft(rec, updated);
        await this.closeIfLeft(rec, updated, new Date(updated.updatedAt));
        return { record: updated, previous: rec, changed: true };
      }
      if (!guessed) await sleep(2 + Math.random() * 10 * Math.min(attempt + 1, 8));
    }
    throw conflict('The sandbox is being changed by other requests; try again');
  }

  /**
   * Meters the compute of a RUNNING sandbox's generation from its last recorded point (its check-in
   * before the first record) to now, in whole seconds (the remainder carries to the next heartbeat).
   * The record's key is (sandbox, generation, interval start): the same heartbeat delivered again
   * reads the same start and its conditional put changes nothing, and the totals move only after
   * that put succeeded. A sandbox lost before its first heartbeat is never billed; one lost later is
   * billed to its last heartbeat. Metering never fails a heartbeat (the interval is billed by the next).
   * `from`: the generation's last recorded point when the caller read it already.
   */
  async accrue(rec: SandboxRecord, at: Date = this.now(), from?: string): Promise<ComputeRecord | undefined> {
    return (await this.accrueWithTotals(rec, at, from))?.record;
  }

  /**
   * `accrue`, with the organization's day totals as the record's ADD left them (the heartbeat's notices and limits read them).
   * `heartbeat`: the interval ends at a heartbeat just heard; when nothing was heard for more than two
   * heartbeat intervals before it (heartbeats refused with our own 5xx, or lost on the way), it bills at
   * most one interval past the last sign of life and records the rest as not billed (`unbilledUntil`).
   */
  async accrueWithTotals(
    rec: SandboxRecord,
    at: Date = this.now(),
    from?: string,
    heartbeat = false,
  ): Promise<{ record: ComputeRecord; orgDay: DayTotals } | undefined> {
    if (rec.status !== 'RUNNING' || !rec.runningAt || !rec.orgId) return undefined;
    try {
      const usage = this.deps.usage!;
      from ??= (await usage.lastComputeEnd(rec.id, rec.generation)) ?? rec.runningAt;
      const whole = Math.floor((at.getTime() - Date.parse(from)) / 1000);
      let seconds = whole;
      let unbilledUntil: string | undefined;
      if (heartbeat) {
        // The last sign of life the record read shows: a record's end or activity (the key stays `from`,
        // so racing deliveries of one heartbeat still write once).
        const interval = this.deps.config.heartbeatSeconds * 1000;
        const alive = Math.max(Date.parse(from), Date.parse(rec.lastActivityAt));
        if (at.getTime() - alive > 2 * interval) {
          seconds = Math.floor((alive + interval - Date.parse(from)) / 1000);
          unbilledUntil = new Date(Date.parse(from) + whole * 1000).toISOString();
        }
      }
      if (seconds < 1) return undefined;
      const spec = this.deps.specs.get(rec.specId);
      // Locally the factor does not apply (a process has no size): the nominal size, factor 1.
      const factor = spec?.fargate ? (rec.resourceFactor ?? 1) : 1;
      const cpuUnits = (spec?.cpu ?? NOMINAL_SIZE.cpu) * factor;
      const memoryMiB = (spec?.memory ?? NOMINAL_SIZE.memory) * factor;
      const spot = !!spec?.fargate?.spot && rec.runtimeState?.[CAPACITY_STATE] !== 'FARGATE';
      // A Fargate task has a public IPv4 address (assignPublicIp): priced in with its compute; a local process has none.
      const price = this.deps.prices!.compute(process.env.AWS_REGION, spot, !!spec?.fargate);
      const charge = computeCharge(seconds, cpuUnits, memoryMiB, price);
      const record: ComputeRecord = {
        sandboxId: rec.id,
        generation: rec.generation,
        orgId: rec.orgId,
        userId: rec.userId,
        specId: rec.specId,
        day: from.slice(0, 10),
        from,
        to: new Date(Date.parse(from) + seconds * 1000).toISOString(),
        seconds,
        factorSeconds: seconds * factor,
        vcpuSeconds: charge.vcpuSeconds,
        gbSeconds: charge.gbSeconds,
        computeMicroUsd: charge.costMicroUsd,
        cpuUnits,
        memoryMiB,
        resourceFactor: factor,
        price,
        // When it was written (not the interval's end): the reconcile's settled time counts from here.
        recordedAt: this.iso(),
        ...(unbilledUntil ? { unbilledUntil } : {}),
      };
      const orgDay = await usage.recordCompute(record);
      return orgDay ? { record, orgDay } : undefined;
    } catch (err) {
      logger.error('Metering a heartbeat failed; the next one bills the interval', {
        sandboxId: rec.id,
        error: err as Error,
      });
      return undefined;
    }
  }

  /**
   * The closing record (docs/billing.md, "Closing records"): a RUNNING generation that stops running
   * (paused, deleted, failed, lost) is billed from its last recorded point to the change at `at` when
   * it was alive then (a sign of life, a heartbeat's record or activity, within two heartbeat intervals),
   * otherwise only to its last sign of life: a crash or a silent program is never billed to its discovery.
   * Same key as a heartbeat's (sandbox, generation, start): a heartbeat racing it, or a repeat, writes once.
   */
  private async closeIfLeft(before: SandboxRecord, after: SandboxRecord, at: Date): Promise<void> {
    if (before.status !== 'RUNNING' || !before.runningAt || !before.orgId) return;
    if (after.status === 'RUNNING' && !after.deletedAt && after.generation === before.generation) return;
    try {
      const from = (await this.deps.usage!.lastComputeEnd(before.id, before.generation)) ?? before.runningAt;
      const alive = Math.max(Date.parse(from), Date.parse(before.lastActivityAt));
      const stopped = after.status === 'PAUSED' || after.deletedAt !== undefined;
      const silent = at.getTime() - alive > 2 * this.deps.config.heartbeatSeconds * 1000;
      await this.accrue(before, stopped && !silent ? at : new Date(Math.min(alive, at.getTime())), from);
    } catch (err) {
      logger.error('The closing record failed; that tail is not billed', { sandboxId: before.id, error: err as Error });
    }
  }

  /**
   * Every state change goes through `transition`, so this is the one place a sandbox that stops
   * being live (paused, failed, missing, deleted) gives its organization's running slot back.
   */
  private async releaseIfLeft(before: SandboxRecord, after: SandboxRecord): Promise<void> {
    if (!holdsSlot(before) || holdsSlot(after)) return;
    try {
      await this.deps.store.releaseRunning(before.orgId!);
    } catch (err) {
      // The record is right; the counter stays one too high until repaired (docs/billing.md).
      logger.error('Releasing a running slot failed', {
        sandboxId: before.id,
        orgId: before.orgId,
        error: err as Error,
      });
    }
  }

  /** Pauses a live sandbox and stops its process; false when it was not live (or `when` said no). */
  async pauseRecord(
    id: string,
    detail: string | undefined,
    options: { userId?: string; when?: (rec: SandboxRecord) => boolean } = {},
  ): Promise<boolean> {
    const t = await this.transition(
      id,
      (rec) => (isLive(rec.status) && (options.when?.(rec) ?? true) ? toPaused(detail) : 'skip'),
      options,
    );
    if (!t?.changed) return false;
    await this.stopQuietly(instanceOf(t.previous));
    return true;
  }

  /** Turns the same generation of a live sandbox to ERROR and stops whatever runs for it. */
  async failIfCurrent(
    rec: SandboxRecord,
    detail: string,
    when: (cur: SandboxRecord) => boolean = () => true,
  ): Promise<boolean> {
    const t = await this.transition(rec.id, (cur) =>
      cur.generation === rec.generation && isLive(cur.status) && when(cur) ? toError(detail) : 'skip',
    );
    if (!t?.changed) return false;
    logger.warn('sandbox.failed', { sandboxId: rec.id, userId: rec.userId, detail });
    await this.stopQuietly(instanceOf(t.previous));
    return true;
  }

  /**
   * Runs generation `record.generation` and records the outcome, if that generation is still the
   * current one. A start that lost a race (paused or deleted meanwhile) stops what it started. A
   * failure worth retrying (throttling, no capacity) leaves the sandbox STARTING with a detail and
   * a time for the sweeper's next attempt, within the start time-out; any other is an ERROR.
   */
  async launch(
    record: SandboxRecord,
    spec: SandboxSpec,
    enrollmentToken: string,
    bridgeUrl: string,
    options: LaunchOptions,
    /** Start cold for this reason, without asking the pool (a standby that did not take its binding). */
    coldReason?: string,
  ): Promise<SandboxRecord> {
    const generation = record.generation;
    let started: { ref: string; state: RuntimeState; runningAt?: string } | undefined;
    let failure: SandboxStartError | undefined;
    const phases: StartPhases = { warm: false, requested_at: record.startedAt ?? record.lastActivityAt };
    // A spec without a pool never touches the pool's store (or needs its grants).
    const claim =
      coldReason === undefined && hasPool(spec) && this.deps.pool
        ? await this.deps.pool.claim({
            sandboxId: record.id,
            userId: record.userId,
            orgId: record.orgId,
            generation,
            spec,
            options,
            enrollmentToken,
            bridgeUrl,
          })
        : { cold: coldReason ?? `spec "${spec.id}" keeps no warm pool` };
    if ('refused' in claim) {
      // A suspended account: paused as the suspension pauses (its slot given back), nothing started.
      logger.warn('sandbox.refused', { sandboxId: record.id, userId: record.userId, detail: claim.refused });
      const t = await this.transition(record.id, (rec) =>
        rec.generation === generation && isLive(rec.status) ? toPaused(claim.refused) : 'skip',
      );
      return t?.record ?? record;
    }
    if ('standbyId' in claim) {
      started = {
        ref: claim.ref,
        state: { ...record.runtimeState, ...claim.state, [RETRY_STATE.bridgeUrl]: bridgeUrl },
      };
      Object.assign(phases, { warm: true, claim_ms: claim.claimMs, claimed_at: claim.claimedAt });
    } else {
      phases.cold_reason = claim.cold;
      const began = performance.now();
      try {
        started = await this.deps.runtime.start({
          sandboxId: record.id,
          userId: record.userId,
          generation,
          spec,
          enrollmentToken,
          bridgeUrl,
          state: record.runtimeState,
          options,
        });
        phases.run_task_ms = Math.round(performance.now() - began);
        if (started.runningAt) phases.container_started_at = started.runningAt;
      } catch (err) {
        failure =
          err instanceof SandboxStartError
            ? err
            : new SandboxStartError(`The sandbox could not be started: ${(err as Error).message}`);
      }
    }
    const attempt = Number(record.runtimeState?.[RETRY_STATE.attempt] ?? 0) + 1;
    const deadline =
      Date.parse(record.startedAt ?? record.lastActivityAt) + this.deps.config.startTimeoutSeconds * 1000;
    const retryAt = failure?.retryable ? this.now().getTime() + retryDelayMs(attempt) : undefined;
    const retry = retryAt !== undefined && retryAt < deadline;
    const state: RuntimeState = { ...(started?.state ?? failure!.state) };
    for (const key of Object.values(RETRY_STATE)) delete state[key];
    // A claimed standby keeps what a cold start after it would need (the 10 s binding deadline).
    if (phases.warm) state[RETRY_STATE.bridgeUrl] = bridgeUrl;
    else delete state[STANDBY_STATE];
    if (retry) {
      Object.assign(state, {
        [RETRY_STATE.at]: new Date(retryAt).toISOString(),
        [RETRY_STATE.attempt]: String(attempt),
        [RETRY_STATE.error]: failure!.detail,
        [RETRY_STATE.bridgeUrl]: bridgeUrl,
        [RETRY_STATE.launch]: JSON.stringify(options),
      });
    }
    const detail = failure && (attempt > 1 ? `${failure.detail} (after ${attempt} attempts)` : failure.detail);
    let current = false;
    // Decided first on the record as the caller wrote it (a start's or resume's write just before).
    const t = await this.transition(
      record.id,
      (rec) => {
        current = rec.generation === generation && isLive(rec.status);
        const patch: SandboxPatch = sameState(rec.runtimeState, state) ? {} : { runtimeState: state };
        if (current && started && rec.runtimeRef !== started.ref) patch.runtimeRef = started.ref;
        if (current) patch.phases = phases;
        if (current && failure)
          Object.assign(
            patch,
            retry
              ? { detail: `Waiting to start, trying again at ${state[RETRY_STATE.at]}: ${detail}` }
              : toError(detail!),
          );
        return Object.keys(patch).length ? patch : 'skip';
      },
      { known: record },
    );
    if (failure && current)
      logger.warn(retry ? 'sandbox.start-retry' : 'sandbox.failed', {
        sandboxId: record.id,
        userId: record.userId,
        detail,
      });
    if (started && !current) {
      const instance = { sandboxId: record.id, generation, ref: started.ref, state };
      // Deleted meanwhile: the delete's clean-up may have run before this start, so clean up again.
      if (t) await this.stopQuietly(instance);
      else
        await this.deps.runtime
          .destroy(instance)
          .catch((err: unknown) =>
            logger.error('Clean-up after a lost start failed', { sandboxId: record.id, error: err as Error }),
          );
    }
    return t?.record ?? record;
  }

  /** Runs the runtime's clean-up, then removes the snapshots and the record. False when it continues later. */
  async finishDelete(rec: SandboxRecord): Promise<boolean> {
    try {
      const out = await this.deps.runtime.destroy(instanceOf(rec));
      if (out.done) {
        // After the last task stopped: a task saves its workspace after SIGTERM, so not before.
        if (this.deps.snapshotRemoval) {
          await this.deps.snapshotRemoval.remove(rec.id);
          // Its snapshots go now: the storage it held ends here.
          await this.meterStorage(rec, 0, null);
        }
        await this.deps.store.remove(rec.id);
        return true;
      }
      if (!sameState(rec.runtimeState, out.state))
        await this.deps.store.update(rec.id, rec.version, { runtimeState: out.state });
    } catch (err) {
      logger.error('Sandbox clean-up failed; the sweeper will retry', { sandboxId: rec.id, error: err as Error });
    }
    return false;
  }

  /**
   * The workspace storage a sandbox holds is now `bytes` (its snapshot `key`; 0 and null: none, deleted).
   * Where snapshots exist (AWS) only; metering never fails the call that changed them (logged: the holding
   * stays as it was until the next change).
   */
  async meterStorage(rec: SandboxRecord, bytes: number, key: string | null): Promise<void> {
    try {
      await new StorageMeter(this.deps.usage!, this.deps.prices!, this.now).hold(rec, bytes, key);
    } catch (err) {
      logger.error('Metering workspace storage failed', { sandboxId: rec.id, error: err as Error });
    }
  }

  async stopQuietly(instance: InstanceRef): Promise<void> {
    try {
      await this.deps.runtime.stop(instance);
    } catch (err) {
      // The sweeper's orphan pass stops it later; the record is already right.
      logger.error('Stopping a sandbox failed', { sandboxId: instance.sandboxId, error: err as Error });
    }
  }
}
