import { logger } from '#shared/logging.ts';
import type { SandboxStatus } from '#shared/protocol.ts';
import { isLive } from '#shared/sandboxes/model.ts';
import {
  DELETE_RETRY_MS,
  instanceOf,
  newToken,
  STANDBY_STATE,
  notLive,
  RETRY_STATE,
  SandboxLifecycle,
  type SandboxServiceDeps,
  sha256,
  toError,
  toPaused,
  type SweepSummary,
} from '#shared/sandboxes/lifecycle.ts';
import type { LaunchOptions } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import type { InstanceStopped } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import { BINDING_ACK_MS } from '#shared/sandboxes/pool-store.ts';
import type { BindingClaim } from '#shared/sandboxes/pool-claim.ts';
import { emitStartMetrics, fromTaskTimes } from '#shared/sandboxes/phases.ts';

/** Housekeeping: ECS (or process) stop events, the scheduled sweep, the local server's shutdown. */
export class SandboxHousekeeping {
  private readonly lifecycle: SandboxLifecycle;

  constructor(private readonly deps: SandboxServiceDeps) {
    this.lifecycle = new SandboxLifecycle(deps);
  }

  /**
   * A process or task ended. For the current generation of a live sandbox: a crash becomes ERROR
   * with the reason, a stop that was asked for becomes PAUSED, and so does a Spot interruption
   * (resumable: the program saved the workspace in the notice ECS gives). Stale generations and sandboxes that
   * were already paused, failed or deleted are left alone, so a repeated event does no harm.
   */
  /**
   * ECS's timestamps of a sandbox's cold-started task (its RUNNING event): PROVISIONING and PENDING
   * on the start's phases, once per generation, with their metrics; and the container start to
   * check-in when the check-in came first (the event and the check-in race).
   */
  async recordTaskTimes(
    sandboxId: string,
    generation: number,
    times: { createdAt?: string; pullStartedAt?: string; pullStoppedAt?: string; startedAt?: string },
  ): Promise<void> {
    const t = await this.lifecycle.transition(sandboxId, (rec) => {
      if (rec.generation !== generation || !rec.phases || rec.phases.warm || rec.phases.provisioning_ms !== undefined)
        return 'skip';
      const phases = fromTaskTimes(rec.phases, times);
      if (rec.runningAt && phases.check_in_ms === undefined && times.startedAt)
        phases.check_in_ms = Math.max(0, Date.parse(rec.runningAt) - Date.parse(times.startedAt));
      return { phases };
    });
    if (t?.changed && t.record.phases)
      emitStartMetrics(t.record.phases, ['provisioning_ms', 'pending_ms', 'check_in_ms']);
  }

  async handleInstanceStopped(event: InstanceStopped): Promise<SandboxStatus | undefined> {
    // A Spot task is out of ListTasks from the interruption on, so a sweep may have called it MISSING first.
    const current = (rec: SandboxRecord) =>
      rec.generation === event.generation &&
      (isLive(rec.status) || (event.resumable === true && rec.status === 'MISSING'));
    const t = await this.lifecycle.transition(event.sandboxId, (rec) =>
      !current(rec) ? 'skip' : event.requested || event.resumable ? toPaused(event.detail) : toError(event.detail),
    );
    if (!t?.changed) return undefined;
    if (t.record.status === 'ERROR')
      logger.warn('sandbox.failed', { sandboxId: event.sandboxId, userId: t.record.userId, detail: event.detail });
    return t.record.status;
  }

  /** Continues an unfinished delete (e.g. when the Fargate workspace wipe task has stopped). */
  async continueDelete(sandboxId: string): Promise<boolean> {
    const rec = await this.deps.store.get(sandboxId);
    return rec?.deletedAt ? this.lifecycle.finishDelete(rec) : false;
  }

  /**
   * The scheduled sweep: pauses idle sandboxes, fails starts that never checked in, marks RUNNING
   * sandboxes whose process is gone as MISSING, finishes stalled deletes, and stops processes or
   * tasks that no live record owns. One failing item does not stop the others.
   */
  async sweep(now: Date = this.lifecycle.now()): Promise<SweepSummary> {
    const summary: SweepSummary = {
      paused: [],
      failed: [],
      missing: [],
      orphans: [],
      deleted: [],
      retried: [],
      metered: [],
    };
    const { idleMinutes, startTimeoutSeconds } = this.deps.config;
    const t = now.getTime();
    const idle = (r: SandboxRecord) => t - Date.parse(r.lastActivityAt) > idleMinutes * 60_000;
    const stuck = (r: SandboxRecord) => t - Date.parse(r.startedAt ?? r.lastActivityAt) > startTimeoutSeconds * 1000;
    // Records first, then instances: an instance started after the query is re-checked below before it is stopped.
    const live = await this.deps.store.listLive();
    const instances = await this.deps.runtime.list();
    for (const rec of live) {
      try {
        if (rec.deletedAt) {
          if (t - Date.parse(rec.deletedAt) >= DELETE_RETRY_MS && (await this.lifecycle.finishDelete(rec)))
            summary.deleted.push(rec.id);
        } else if (
          rec.status === 'STARTING' &&
          rec.runtimeState?.[STANDBY_STATE] &&
          t - Date.parse(rec.phases?.claimed_at ?? rec.startedAt ?? rec.lastActivityAt) > BINDING_ACK_MS &&
          !stuck(rec)
        ) {
          if (await this.startColdAfterClaim(rec)) summary.retried.push(rec.id);
        } else if (rec.status === 'STARTING' && stuck(rec)) {
          const lastError = rec.runtimeState?.[RETRY_STATE.error];
          const detail = lastError
            ? `The sandbox could not be started within ${startTimeoutSeconds} seconds: ${lastError}`
            : `The sandbox did not check in within ${startTimeoutSeconds} seconds of starting`;
          if (await this.lifecycle.failIfCurrent(rec, detail, (cur) => cur.status === 'STARTING' && stuck(cur)))
            summary.failed.push(rec.id);
        } else if (
          rec.status === 'STARTING' &&
          rec.runtimeState?.[RETRY_STATE.at] &&
          Date.parse(rec.runtimeState[RETRY_STATE.at]!) <= t
        ) {
          if (await this.retryStart(rec)) summary.retried.push(rec.id);
        } else if (rec.status === 'RUNNING' && idle(rec)) {
          const detail = `Paused after ${idleMinutes} minutes without agent activity`;
          if (
            await this.lifecycle.pauseRecord(rec.id, detail, {
              when: (cur) => cur.generation === rec.generation && idle(cur),
            })
          )
            summary.paused.push(rec.id);
        } else if (
          rec.status === 'RUNNING' &&
          !instances.some((i) => i.sandboxId === rec.id && i.generation === rec.generation)
        ) {
          const t2 = await this.lifecycle.transition(rec.id, (cur) =>
            cur.status === 'RUNNING' && cur.generation === rec.generation
              ? { status: 'MISSING', detail: 'The sandbox process or task no longer exists', ...notLive }
              : 'skip',
          );
          if (t2?.changed) summary.missing.push(rec.id);
        } else if (rec.status === 'RUNNING' && (await this.meterSilent(rec, now))) summary.metered.push(rec.id);
      } catch (err) {
        logger.error('Sweep step failed', { sandboxId: rec.id, error: err as Error });
      }
    }
    for (const inst of instances) {
      try {
        if (
          live.some(
            (r) => r.id === inst.sandboxId && r.generation === inst.generation && !r.deletedAt && isLive(r.status),
          )
        )
          continue;
        const rec = await this.deps.store.get(inst.sandboxId);
        if (rec && !rec.deletedAt && isLive(rec.status) && rec.generation === inst.generation) continue;
        await this.deps.runtime.stop(inst);
        summary.orphans.push(inst.sandboxId);
      } catch (err) {
        logger.error('Stopping an orphan failed', { sandboxId: inst.sandboxId, error: err as Error });
      }
    }
    if (Object.values(summary).some((list) => list.length)) logger.info('sandbox.sweep', { ...summary });
    return summary;
  }

  /**
   * A RUNNING sandbox whose last record is more than two heartbeat intervals old stopped heartbeating;
   * if it showed life since (events posted, `lastActivityAt`), that time is metered now, up to its last
   * sign of life (docs/billing.md, "Silent sandboxes"): a program that posts events but never heartbeats
   * is billed as one that heartbeats. One Query per RUNNING sandbox per sweep; a record only when silent.
   */
  private async meterSilent(rec: SandboxRecord, now: Date): Promise<boolean> {
    const from = (await this.deps.usage!.lastComputeEnd(rec.id, rec.generation)) ?? rec.runningAt;
    if (!from || now.getTime() - Date.parse(from) <= 2 * this.deps.config.heartbeatSeconds * 1000) return false;
    const alive = Math.min(Date.parse(rec.lastActivityAt), now.getTime());
    if (alive - Date.parse(from) < 1000) return false;
    return (await this.lifecycle.accrue(rec, new Date(alive), from)) !== undefined;
  }

  /**
   * A claim's deadline (the state machine's call, BINDING_ACK_MS after the claim; locally a timer):
   * if the sandbox is still STARTING in that generation and still names that standby, the standby has
   * not acknowledged its binding, and the sandbox starts cold. Anything else (checked in, paused,
   * deleted, already started cold) changes nothing, so a repeated or late call does no harm.
   */
  async bindingDeadline(claim: BindingClaim): Promise<boolean> {
    const rec = await this.deps.store.get(claim.sandbox_id);
    if (
      !rec ||
      rec.deletedAt ||
      rec.status !== 'STARTING' ||
      rec.generation !== claim.generation ||
      rec.runtimeState?.[STANDBY_STATE] !== claim.standby_id
    )
      return false;
    return this.startColdAfterClaim(rec);
  }

  /**
   * A claimed standby that did not take its binding within 10 s: it is stopped, and the sandbox
   * starts cold as a new generation (so nothing the standby still does counts), with a new
   * enrollment token and a detail that says so.
   */
  private async startColdAfterClaim(rec: SandboxRecord): Promise<boolean> {
    const spec = this.deps.specs.get(rec.specId);
    if (!spec)
      return this.lifecycle.failIfCurrent(rec, `Sandbox spec "${rec.specId}" no longer exists; start a new sandbox`);
    const standby = rec.runtimeState?.[STANDBY_STATE];
    const enrollment = newToken('enr');
    const reason = `the claimed standby did not take its binding within ${BINDING_ACK_MS / 1000} s`;
    const t = await this.lifecycle.transition(rec.id, (cur) => {
      if (
        cur.generation !== rec.generation ||
        cur.status !== 'STARTING' ||
        cur.runtimeState?.[STANDBY_STATE] !== standby
      )
        return 'skip';
      const { [STANDBY_STATE]: _s, ...state } = cur.runtimeState ?? {};
      return {
        generation: cur.generation + 1,
        enrollmentHash: sha256(enrollment),
        runtimeRef: null,
        runtimeState: state,
        detail: `Starting cold: ${reason}`,
      };
    });
    if (!t?.changed) return false;
    logger.warn('pool.binding-timeout', { sandboxId: rec.id, standbyId: standby });
    await this.lifecycle.stopQuietly(instanceOf(t.previous));
    await this.lifecycle.launch(
      t.record,
      spec,
      enrollment,
      rec.runtimeState?.[RETRY_STATE.bridgeUrl] ?? '',
      {},
      reason,
    );
    return true;
  }

  /**
   * Tries a start again that failed for want of capacity or by throttling (the record says when):
   * a new enrollment token for the same generation, then the same launch as the first attempt.
   */
  private async retryStart(rec: SandboxRecord): Promise<boolean> {
    const due = rec.runtimeState?.[RETRY_STATE.at];
    const spec = this.deps.specs.get(rec.specId);
    if (!spec)
      return this.lifecycle.failIfCurrent(rec, `Sandbox spec "${rec.specId}" no longer exists; start a new sandbox`);
    const enrollment = newToken('enr');
    const t = await this.lifecycle.transition(rec.id, (cur) => {
      if (
        cur.generation !== rec.generation ||
        cur.status !== 'STARTING' ||
        cur.runtimeRef ||
        cur.runtimeState?.[RETRY_STATE.at] !== due
      )
        return 'skip';
      // The due time goes at once, so two sweeps never launch the same attempt twice.
      const { [RETRY_STATE.at]: _due, ...state } = cur.runtimeState ?? {};
      return { enrollmentHash: sha256(enrollment), runtimeState: state };
    });
    if (!t?.changed) return false;
    const options = JSON.parse(rec.runtimeState?.[RETRY_STATE.launch] ?? '{}') as LaunchOptions;
    await this.lifecycle.launch(t.record, spec, enrollment, rec.runtimeState?.[RETRY_STATE.bridgeUrl] ?? '', options);
    return true;
  }

  /**
   * The local server came back after stopping without pausing its sandboxes (a crash, `kill -9`):
   * live records whose process is not running died with it. RUNNING becomes MISSING and STARTING
   * becomes ERROR at once, rather than at the sweep's time-outs. Returns the ids it changed.
   */
  async reconcileLost(detail: string): Promise<string[]> {
    const live = await this.deps.store.listLive();
    const instances = await this.deps.runtime.list();
    const lost: string[] = [];
    for (const rec of live) {
      if (rec.deletedAt || instances.some((i) => i.sandboxId === rec.id && i.generation === rec.generation)) continue;
      const t = await this.lifecycle.transition(rec.id, (cur) =>
        cur.generation !== rec.generation || !isLive(cur.status)
          ? 'skip'
          : cur.status === 'RUNNING'
            ? { status: 'MISSING', detail, ...notLive }
            : toError(detail),
      );
      if (t?.changed) lost.push(rec.id);
    }
    if (lost.length) logger.warn('sandbox.lost', { sandboxIds: lost, detail });
    return lost;
  }

  /** Pauses every live sandbox (the local server shutting down), so no process outlives it. */
  async suspendAll(detail: string): Promise<void> {
    const live = await this.deps.store.listLive();
    await Promise.all(
      live.filter((r) => !r.deletedAt).map((r) => this.lifecycle.pauseRecord(r.id, detail).catch(() => false)),
    );
  }
}
