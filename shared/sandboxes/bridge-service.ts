import { conflict, tooManyRequests, unauthorized } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import { STOP_COMMAND, type SandboxCommand, type SandboxStatus } from '#shared/protocol.ts';
import { emitStartMetrics, checkedIn, restored } from '#shared/sandboxes/phases.ts';
import {
  newToken,
  SandboxLifecycle,
  type SandboxServiceDeps,
  sameHash,
  sha256,
  STANDBY_STATE,
  toPaused,
} from '#shared/sandboxes/lifecycle.ts';
import { DEFAULT_PLANS } from '#shared/plans/model.ts';
import type { SandboxRecord, StoredCommand } from '#shared/sandboxes/sandbox-store.ts';
import { ownsSnapshot, SNAPSHOT_STATE } from '#shared/sandboxes/snapshots/snapshot-model.ts';
import type { WorkspaceSnapshots } from '#shared/sandboxes/snapshots/workspace-snapshots.ts';
import { armSignal } from '#shared/sandboxes/command-signal.ts';
import { aroundWrite, limitReached, readStanding, standingOf } from '#shared/usage/standing.ts';
import type { ComputeRecord, DayTotals } from '#shared/usage/usage-store.ts';

/** The bridge: what the program inside a sandbox calls with its own key (check-in, heartbeat, the command queue). */
export class SandboxBridge {
  private readonly lifecycle: SandboxLifecycle;

  constructor(private readonly deps: SandboxServiceDeps) {
    this.lifecycle = new SandboxLifecycle(deps);
  }

  /** Exchanges the one-time enrollment token for the session key; the sandbox is RUNNING from here. */
  async checkIn(first: SandboxRecord | undefined, enrollmentToken: string | undefined, agent: { version: string }) {
    if (!first || !enrollmentToken) throw unauthorized();
    const sandboxId = first.id;
    const tokenHash = sha256(enrollmentToken);
    if (first.deletedAt || !sameHash(first.enrollmentHash, tokenHash)) throw unauthorized();
    const sessionKey = newToken('sbx');
    const sealed = await this.deps.sealer.seal(sessionKey, first.userId);
    // Decided first on the record the credential check read (one read less); a write meanwhile (the
    // launch recording its phases) fails the conditional update, and the transition reads it again.
    const t = await this.lifecycle.transition(
      sandboxId,
      (rec) => {
        if (rec.status !== 'STARTING' || !sameHash(rec.enrollmentHash, tokenHash)) return 'skip';
        const at = this.lifecycle.iso();
        // A claimed standby's check-in is its acknowledged binding: it is the sandbox's task from here.
        const { [STANDBY_STATE]: _standby, ...state } = rec.runtimeState ?? {};
        return {
          status: 'RUNNING',
          enrollmentHash: null,
          sessionKeyHash: sha256(sessionKey),
          sessionKeySealed: sealed,
          lastActivityAt: at,
          // Billing starts here for a cold start, at the claim for a warm one (a standby's wait is never billed).
          runningAt: rec.phases?.warm && rec.phases.claimed_at ? rec.phases.claimed_at : at,
          detail: null,
          agentVersion: agent.version,
          ...(rec.runtimeState?.[STANDBY_STATE] ? { runtimeState: state } : {}),
          ...(rec.phases ? { phases: checkedIn(rec.phases, at) } : {}),
        };
      },
      { known: first },
    );
    if (!t?.changed) throw unauthorized();
    logger.info('sandbox.started', {
      sandboxId,
      userId: t.record.userId,
      generation: t.record.generation,
      startLatencyMs: Date.parse(t.record.lastActivityAt) - Date.parse(t.record.startedAt ?? t.record.lastActivityAt),
      phases: t.record.phases,
    });
    // Only what the check-in adds: PROVISIONING and PENDING are the task event's line (it may have come first).
    if (t.record.phases) emitStartMetrics(t.record.phases, ['claim_ms', 'run_task_ms', 'check_in_ms', 'total_ms']);
    return {
      sandbox_id: sandboxId,
      session_api_key: sessionKey,
      heartbeat_seconds: this.deps.config.heartbeatSeconds,
      poll_wait_seconds: this.deps.config.pollMaxSeconds,
    };
  }

  /**
   * The sandbox's record when `key` is one of its credentials at all: its session key (in any state,
   * so a stale program can still be told to stop) or, for check-in, its pending enrollment token;
   * null otherwise. The wrapper asks this before it reads a sandbox route's body and hands the record
   * to the operation, which checks in detail (e.g. RUNNING) without reading it again.
   */
  async admitted(
    sandboxId: string,
    key: string | undefined,
    kind: 'session' | 'enrollment',
  ): Promise<SandboxRecord | null> {
    if (kind === 'session') return this.lifecycle.keyOwner(sandboxId, key);
    if (!key) return null;
    const rec = await this.deps.store.get(sandboxId);
    return rec && !rec.deletedAt && sameHash(rec.enrollmentHash, sha256(key)) ? rec : null;
  }

  /**
   * The RUNNING sandbox a session key belongs to, or null (wrong key, unknown id, not RUNNING).
   * For sandbox-facing entries outside the wrapper (the command socket's `$connect`); routes get the
   * record from the wrapper's key check (`admitted`) instead.
   */
  async authenticateSandbox(sandboxId: string, key: string | undefined): Promise<SandboxRecord | null> {
    const rec = await this.lifecycle.keyOwner(sandboxId, key);
    return rec?.status === 'RUNNING' ? rec : null;
  }

  /**
   * Records a heartbeat; `active` (the agent did work) counts as activity for the idle sweep. Answers
   * the status and the number of the last command queued (`command_seq`, from the record it reads
   * anyway): a program on a socket that has not seen that command fetches the queue over HTTP.
   */
  async heartbeat(
    caller: SandboxRecord | undefined,
    active: boolean,
    restoreMs?: number,
  ): Promise<{ status: SandboxStatus; command_seq: number }> {
    const rec = known(caller);
    if (rec.status === 'RUNNING' && active) await this.deps.store.touchActivity(rec.id, this.lifecycle.iso());
    // The start's restore phase, once per generation (the program reports it after its check-in).
    if (restoreMs !== undefined && rec.status === 'RUNNING' && rec.phases && rec.phases.restore_ms === undefined) {
      const t = await this.lifecycle.transition(rec.id, (cur) =>
        cur.generation === rec.generation && cur.phases && cur.phases.restore_ms === undefined
          ? { phases: restored(cur.phases, restoreMs) }
          : 'skip',
      );
      if (t?.changed && t.record.phases) emitStartMetrics(t.record.phases, ['restore_ms']);
    }
    // Paused at the heartbeat that crossed a monthly limit: the program stops on this answer.
    const status = rec.status === 'RUNNING' && (await this.meter(rec, undefined, true)) ? 'PAUSED' : rec.status;
    return { status, command_seq: rec.commandSeq ?? 0 };
  }

  /** The compute of a RUNNING generation to `at` (`SandboxLifecycle.accrue`; the heartbeat's `meter` records it with its totals). */
  accrue(rec: SandboxRecord, at?: Date, from?: string): Promise<ComputeRecord | undefined> {
    return this.lifecycle.accrue(rec, at, from);
  }

  /**
   * A heartbeat's metering: the interval's record (`accrue`), then the organization's standing against
   * its plan (`enforceMonthly`: notices, pause). True when the sandbox was paused. `heard`: a heartbeat
   * just received, so a long unheard gap before it is not billed past one interval (`accrueWithTotals`).
   */
  async meter(rec: SandboxRecord, at: Date = this.lifecycle.now(), heard = false): Promise<boolean> {
    const metered = await this.lifecycle.accrueWithTotals(rec, at, undefined, heard);
    return metered ? this.enforceMonthly(rec, metered.record, metered.orgDay) : false;
  }

  /**
   * After a record: the organization's standing (its month, and a prepaid plan's credits) against its
   * plan. The thresholds the record's ADD moved it across are noticed (80% / 100%, once per month:
   * shared/usage/alerts.ts; `orgDay` is the total that ADD returned, so among racing heartbeats exactly
   * one crosses). A monthly limit reached with `on_limit: stop`, or spent credits (always): the sandbox
   * is paused (workspace kept) with a detail saying why, and its running slot goes back; with `warn`, a
   * log line only. True when paused. Racing sandboxes each pause at their own next heartbeat: the
   * overshoot is at most one heartbeat interval of compute per sandbox.
   */
  async enforceMonthly(rec: SandboxRecord, record: ComputeRecord, orgDay?: DayTotals): Promise<boolean> {
    try {
      const plan = (this.deps.plans ?? DEFAULT_PLANS).plan(rec.plan);
      const input = await readStanding(this.deps.usage!, record.orgId, record.day, plan.prepaid);
      let after = standingOf(input, record.day);
      if (orgDay) {
        const around = aroundWrite(input, orgDay, record);
        after = standingOf(around.after, record.day);
        await this.deps.alerts?.check(record.orgId, plan, standingOf(around.before, record.day), after, record.day);
      }
      const reached = limitReached(plan, after);
      if (!reached) return false;
      logger.warn('plan.limit', { orgId: record.orgId, sandboxId: rec.id, code: reached.code, onLimit: plan.on_limit });
      if (plan.on_limit !== 'stop' && reached.code !== 'credits_exhausted') return false;
      const detail = `Paused: ${reached.message}`;
      const t = await this.lifecycle.transition(rec.id, (cur) =>
        cur.status === 'RUNNING' && cur.generation === rec.generation ? toPaused(detail) : 'skip',
      );
      // No runtime call here (the heartbeat carries no ECS client): the program stops itself on the
      // PAUSED answer, saving its workspace, and the sweeper stops a task no live record owns.
      if (!t?.changed) return false;
      // Its conversations say why (the one heartbeat that paused it: once per generation).
      const why = { code: reached.code, limit: reached.limit, used: reached.used, detail };
      await this.deps.pauseNotices
        ?.paused(rec, why)
        .catch((err: unknown) =>
          logger.warn('sandbox.limit-notice-failed', { sandboxId: rec.id, error: err as Error }),
        );
      return true;
    } catch (err) {
      logger.error('Checking the monthly limits failed; the next heartbeat checks again', {
        sandboxId: rec.id,
        error: err as Error,
      });
      return false;
    }
  }

  /**
   * The command socket's `$connect` (AWS): the program of a RUNNING sandbox opens it with its session
   * key, and from then on commands queued for it are pushed to `connectionId`. False (refuse the
   * connection) for a wrong key, another sandbox's key, or a sandbox that is not RUNNING.
   */
  async connectSocket(sandboxId: string | undefined, key: string | undefined, connectionId: string): Promise<boolean> {
    if (!sandboxId || !key) return false;
    const rec = await this.authenticateSandbox(sandboxId, key);
    if (!rec?.sessionKeyHash) return false;
    const ok = await this.deps.store.setCommandSocket(sandboxId, rec.sessionKeyHash, connectionId);
    if (ok) logger.info('sandbox.socket', { sandboxId, userId: rec.userId });
    return ok;
  }

  /**
   * Waits up to `waitSeconds` (capped by the deployment) for queued commands. A sandbox that is no
   * longer RUNNING (paused, failed, replaced by a newer generation) gets a `stop` command instead.
   */
  async pollCommands(caller: SandboxRecord | undefined, waitSeconds: number): Promise<{ commands: SandboxCommand[] }> {
    let rec = known(caller);
    const sandboxId = rec.id;
    const deadline = Date.now() + Math.min(waitSeconds, this.deps.config.pollMaxSeconds) * 1000;
    // Armed before the queue is read: a command queued while it is read wakes the wait after it at once.
    const queuedSignal = armSignal(sandboxId);
    try {
      for (;;) {
        if (rec.status !== 'RUNNING') return { commands: [this.stopCommand(`the sandbox is ${rec.status}`)] };
        const queued = await this.deps.store.listCommands(sandboxId, 10);
        if (queued.length) return { commands: await Promise.all(queued.map((c) => this.openCommand(c, rec!.userId))) };
        const left = deadline - Date.now();
        if (left <= 0) return { commands: [] };
        await queuedSignal.wait(Math.min(this.deps.config.pollIntervalMs, left));
        const again = await this.deps.store.get(sandboxId);
        if (!again || again.deletedAt || again.sessionKeyHash !== rec.sessionKeyHash) {
          return { commands: [this.stopCommand('the sandbox was deleted or restarted')] };
        }
        rec = again;
      }
    } finally {
      queuedSignal.close();
    }
  }

  /** Removes a delivered command from the queue (idempotent; seq 0, the synthetic stop, is not queued). */
  async ackCommand(caller: SandboxRecord | undefined, seq: number): Promise<void> {
    const rec = known(caller);
    if (seq > 0) await this.deps.store.deleteCommand(rec.id, seq);
  }

  /**
   * Workspace snapshots (AWS). The session key authenticates in any state: a paused task saves its
   * workspace after StopTask (SIGTERM), and a replaced generation's key no longer matches.
   */
  async snapshotUpload(caller: SandboxRecord | undefined) {
    const sandboxId = known(caller).id;
    const snapshots = this.snapshots();
    // Uploads granted but never reported complete stay until the next completed snapshot prunes them.
    if (!(await snapshots.hasRoom(sandboxId)))
      throw tooManyRequests('Too many snapshots of this sandbox are pending: complete one first', 60);
    return snapshots.upload(sandboxId);
  }

  /** Moves the sandbox's pointer to `objectKey` once S3 has it (never backwards), then removes older snapshots. */
  async snapshotComplete(
    caller: SandboxRecord | undefined,
    objectKey: string,
  ): Promise<{ key: string; bytes: number }> {
    const sandboxId = known(caller).id;
    const snapshots = this.snapshots();
    if (!ownsSnapshot(sandboxId, objectKey)) throw conflict('Not a snapshot key of this sandbox');
    const bytes = await snapshots.verify(sandboxId, objectKey);
    if (bytes === null) throw conflict('No such snapshot: its upload did not complete');
    const t = await this.lifecycle.transition(sandboxId, (rec) => {
      const current = rec.runtimeState?.[SNAPSHOT_STATE];
      // Keys start with their issue time: a late report of an older upload never replaces a newer one.
      if (current && current >= objectKey) return 'skip';
      return { runtimeState: { ...rec.runtimeState, [SNAPSHOT_STATE]: objectKey } };
    });
    if (t?.changed) {
      await snapshots.prune(sandboxId, objectKey);
      // The workspace storage now held is this snapshot's bytes (docs/billing.md, "Workspace storage").
      await this.lifecycle.meterStorage(t.record, bytes, objectKey);
    }
    return { key: objectKey, bytes };
  }

  async snapshotDownload(
    caller: SandboxRecord | undefined,
  ): Promise<{ url: string | null; expires_at: string | null }> {
    const rec = known(caller);
    const sandboxId = rec.id;
    const current = rec.runtimeState?.[SNAPSHOT_STATE];
    if (!current) return { url: null, expires_at: null };
    return this.snapshots().download(sandboxId, current);
  }

  private snapshots(): WorkspaceSnapshots {
    const snapshots = this.deps.snapshots;
    if (!snapshots) throw conflict('This deployment keeps workspaces as directories: there are no snapshots');
    return snapshots;
  }

  private stopCommand(reason: string): SandboxCommand {
    return { seq: 0, type: STOP_COMMAND, payload: { reason }, created_at: this.lifecycle.iso() };
  }

  private async openCommand(c: StoredCommand, userId: string): Promise<SandboxCommand> {
    const payload =
      c.sealedPayload !== undefined
        ? (JSON.parse(await this.deps.sealer.open(c.sealedPayload, userId)) as unknown)
        : c.payload !== undefined
          ? (JSON.parse(c.payload) as unknown)
          : null;
    return { seq: c.seq, type: c.type, payload, created_at: c.createdAt };
  }
}

/**
 * The record the wrapper's key check read for this request (`admitted`: the key is this sandbox's
 * credential); the bridge's operations take it instead of reading the record again.
 */
function known(caller: SandboxRecord | undefined): SandboxRecord {
  if (!caller) throw unauthorized();
  return caller;
}
