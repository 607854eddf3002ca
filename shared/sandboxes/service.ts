import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { conflict, invalidField, notFound, unauthorized } from '#shared/http/errors.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import { logger } from '#shared/logging.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';
import type { SpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import type { SandboxConfig } from '#shared/sandboxes/config.ts';
import { isLive, type CommandInput, type SandboxCommand, type SandboxInfo, type SandboxStatus } from '#shared/sandboxes/model.ts';
import {
  SandboxStartError,
  type InstanceRef,
  type InstanceStopped,
  type RuntimeState,
  type SandboxRuntime,
} from '#shared/sandboxes/sandbox-runtime.ts';
import { LIVE_SHARD, type SandboxPatch, type SandboxRecord, type SandboxStore, type StoredCommand } from '#shared/sandboxes/sandbox-store.ts';

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
  now?: () => Date;
}

export interface SweepSummary {
  paused: string[];
  failed: string[];
  missing: string[];
  orphans: string[];
  deleted: string[];
}

type Decision = SandboxPatch | 'skip';
interface Transition {
  record: SandboxRecord;
  previous: SandboxRecord;
  changed: boolean;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const newToken = (prefix: string) => `${prefix}_${randomBytes(32).toString('base64url')}`;
const sameHash = (stored: string | undefined, actual: string) =>
  stored !== undefined && stored.length === actual.length && timingSafeEqual(Buffer.from(stored), Buffer.from(actual));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const instanceOf = (r: SandboxRecord): InstanceRef => ({ sandboxId: r.id, generation: r.generation, ref: r.runtimeRef, state: r.runtimeState });
const sameState = (a: RuntimeState | undefined, b: RuntimeState) => JSON.stringify(a ?? {}) === JSON.stringify(b);

const notLive = { liveShard: null, liveUserId: null, enrollmentHash: null } as const;
const toError = (detail: string): SandboxPatch => ({ status: 'ERROR', detail, ...notLive });
const toPaused = (detail?: string): SandboxPatch => ({ status: 'PAUSED', detail: detail ?? null, ...notLive });

/** A delete older than this that is still unfinished is retried by the sweeper. */
const DELETE_RETRY_MS = 60_000;

/**
 * The sandbox lifecycle: `STARTING -> RUNNING` (only when the program inside checks in),
 * `-> PAUSED` (asked for, idle, or over the per-user limit), `-> ERROR` (a crash, a failed or stuck
 * start), `-> MISSING` (RUNNING but its process or task is gone). Every change is one conditional
 * write on the record's version; the runtime is called after the write that decides, so two
 * racing calls can never leave two live processes for one sandbox.
 */
export class SandboxService {
  private readonly now: () => Date;

  constructor(private readonly deps: SandboxServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  get config(): SandboxConfig {
    return this.deps.config;
  }

  // --- The user's API ---------------------------------------------------------------------------

  /** The user's sandboxes, newest first. */
  async search(userId: string, pageId: string | undefined, limit: number): Promise<{ items: SandboxInfo[]; next_page_id: string | null }> {
    const scope = `sandboxes:${userId}`;
    const startKey = await this.deps.cursors.decode(pageId, scope);
    const page = await this.deps.store.listByUser(userId, limit, startKey);
    const items = await Promise.all(page.items.filter((r) => !r.deletedAt).map((r) => this.view(r)));
    return { items, next_page_id: await this.deps.cursors.encode(page.lastKey, scope) };
  }

  /** In request order; null for an unknown or foreign id. */
  async batchGet(userId: string, ids: string[]): Promise<(SandboxInfo | null)[]> {
    const found = await this.deps.store.batchGet(ids);
    return Promise.all(
      ids.map((id) => {
        const r = found.get(id);
        return r && r.userId === userId && !r.deletedAt ? this.view(r) : null;
      }),
    );
  }

  /** Starts a sandbox; `paused` names sandboxes paused to stay within the per-user limit. */
  async start(userId: string, specId: string | undefined, host: string | undefined): Promise<{ sandbox: SandboxInfo; paused: string[] }> {
    const spec = specId === undefined ? this.deps.specs.defaultSpec() : this.deps.specs.get(specId);
    if (!spec) throw invalidField(['query', 'sandbox_spec_id'], `Unknown sandbox spec "${specId}"`, specId);
    const bridgeUrl = this.deps.bridgeUrl(host);
    const now = this.iso();
    const enrollment = newToken('enr');
    const record: SandboxRecord = {
      id: randomUUID().replaceAll('-', ''),
      userId,
      specId: spec.id,
      status: 'STARTING',
      version: 1,
      generation: 1,
      createdAt: now,
      updatedAt: now,
      lastActivityAt: now,
      startedAt: now,
      liveShard: LIVE_SHARD,
      liveUserId: userId,
      enrollmentHash: sha256(enrollment),
    };
    await this.deps.store.create(record);
    const paused = await this.makeRoom(userId, record.id);
    const launched = await this.launch(record, spec, enrollment, bridgeUrl);
    return { sandbox: await this.view(launched), paused };
  }

  /** Pauses (stops the process, keeps the workspace). Pausing a sandbox that is not live changes nothing. */
  async pause(userId: string, sandboxId: string): Promise<void> {
    await this.pauseRecord(sandboxId, undefined, { userId });
  }

  /** Resumes on the same workspace. Resuming a live sandbox changes nothing. */
  async resume(userId: string, sandboxId: string, host: string | undefined): Promise<{ paused: string[] }> {
    const bridgeUrl = this.deps.bridgeUrl(host);
    let enrollment = '';
    const t = await this.transition(
      sandboxId,
      (rec) => {
        if (isLive(rec.status)) return 'skip';
        enrollment = newToken('enr');
        const now = this.iso();
        return {
          status: 'STARTING',
          generation: rec.generation + 1,
          enrollmentHash: sha256(enrollment),
          liveShard: LIVE_SHARD,
          liveUserId: rec.userId,
          lastActivityAt: now,
          startedAt: now,
          detail: null,
          runtimeRef: null,
        };
      },
      { userId },
    );
    if (!t?.changed) return { paused: [] };
    const paused = await this.makeRoom(userId, sandboxId);
    const spec = this.deps.specs.get(t.record.specId);
    if (!spec) {
      await this.failIfCurrent(t.record, `Sandbox spec "${t.record.specId}" no longer exists; start a new sandbox`);
      return { paused };
    }
    await this.launch(t.record, spec, enrollment, bridgeUrl);
    return { paused };
  }

  /** Stops the sandbox, removes its workspace, its command queue and its record. */
  async delete(userId: string, sandboxId: string): Promise<void> {
    const t = await this.transition(
      sandboxId,
      () => ({ deletedAt: this.iso(), liveShard: LIVE_SHARD, liveUserId: null, enrollmentHash: null, sessionKeyHash: null, sessionKeySealed: null }),
      { userId },
    );
    await this.deps.store.deleteAllCommands(sandboxId);
    await this.finishDelete(t!.record);
  }

  // --- The bridge (called by the program inside the sandbox) --------------------------------------

  /** Exchanges the one-time enrollment token for the session key; the sandbox is RUNNING from here. */
  async checkIn(sandboxId: string, enrollmentToken: string | undefined, agent: { version: string }) {
    if (!enrollmentToken) throw unauthorized();
    const tokenHash = sha256(enrollmentToken);
    const first = await this.deps.store.get(sandboxId);
    if (!first || first.deletedAt || !sameHash(first.enrollmentHash, tokenHash)) throw unauthorized();
    const sessionKey = newToken('sbx');
    const sealed = await this.deps.sealer.seal(sessionKey, first.userId);
    const t = await this.transition(sandboxId, (rec) =>
      rec.status === 'STARTING' && sameHash(rec.enrollmentHash, tokenHash)
        ? {
            status: 'RUNNING',
            enrollmentHash: null,
            sessionKeyHash: sha256(sessionKey),
            sessionKeySealed: sealed,
            lastActivityAt: this.iso(),
            detail: null,
            agentVersion: agent.version,
          }
        : 'skip',
    );
    if (!t?.changed) throw unauthorized();
    logger.info('sandbox.started', {
      sandboxId,
      userId: t.record.userId,
      generation: t.record.generation,
      startLatencyMs: Date.parse(t.record.lastActivityAt) - Date.parse(t.record.startedAt ?? t.record.lastActivityAt),
    });
    return {
      sandbox_id: sandboxId,
      session_api_key: sessionKey,
      heartbeat_seconds: this.deps.config.heartbeatSeconds,
      poll_wait_seconds: this.deps.config.pollMaxSeconds,
    };
  }

  /**
   * The RUNNING sandbox a session key belongs to, or null (wrong key, unknown id, not RUNNING).
   * For other services' sandbox-facing routes (e.g. the conversation webhooks): they answer 401 on null.
   */
  async authenticateSandbox(sandboxId: string, key: string | undefined): Promise<SandboxRecord | null> {
    const rec = await this.keyOwner(sandboxId, key);
    return rec?.status === 'RUNNING' ? rec : null;
  }

  /** Records a heartbeat; `active` (the agent did work) counts as activity for the idle sweep. */
  async heartbeat(sandboxId: string, key: string | undefined, active: boolean): Promise<{ status: SandboxStatus }> {
    const rec = await this.keyOwner(sandboxId, key);
    if (!rec) throw unauthorized();
    if (rec.status === 'RUNNING' && active) await this.deps.store.touchActivity(sandboxId, this.iso());
    return { status: rec.status };
  }

  /**
   * Agent activity seen elsewhere (e.g. events posted through a webhook): postpones the idle pause.
   * Returns false when the sandbox is not RUNNING.
   */
  recordActivity(sandboxId: string): Promise<boolean> {
    return this.deps.store.touchActivity(sandboxId, this.iso());
  }

  /**
   * Waits up to `waitSeconds` (capped by the deployment) for queued commands. A sandbox that is no
   * longer RUNNING (paused, failed, replaced by a newer generation) gets a `stop` command instead.
   */
  async pollCommands(sandboxId: string, key: string | undefined, waitSeconds: number): Promise<{ commands: SandboxCommand[] }> {
    let rec = await this.keyOwner(sandboxId, key);
    if (!rec) throw unauthorized();
    const deadline = Date.now() + Math.min(waitSeconds, this.deps.config.pollMaxSeconds) * 1000;
    for (;;) {
      if (rec.status !== 'RUNNING') return { commands: [this.stopCommand(`the sandbox is ${rec.status}`)] };
      const queued = await this.deps.store.listCommands(sandboxId, 10);
      if (queued.length) return { commands: await Promise.all(queued.map((c) => this.openCommand(c, rec!.userId))) };
      const left = deadline - Date.now();
      if (left <= 0) return { commands: [] };
      await sleep(Math.min(this.deps.config.pollIntervalMs, left));
      const again = await this.deps.store.get(sandboxId);
      if (!again || again.deletedAt || again.sessionKeyHash !== rec.sessionKeyHash) {
        return { commands: [this.stopCommand('the sandbox was deleted or restarted')] };
      }
      rec = again;
    }
  }

  /** Removes a delivered command from the queue (idempotent; seq 0, the synthetic stop, is not queued). */
  async ackCommand(sandboxId: string, key: string | undefined, seq: number): Promise<void> {
    if (!(await this.keyOwner(sandboxId, key))) throw unauthorized();
    if (seq > 0) await this.deps.store.deleteCommand(sandboxId, seq);
  }

  /**
   * Queues a command for the user's sandbox (e.g. `start_conversation`, `send_message`); the program
   * receives them in `seq` order through the long-poll. The payload is sealed at rest (it may carry
   * secrets) unless `options.seal` is false: for payloads that hold no secret and may be larger than
   * KMS's 4 KB (a user message, which is stored as an event in the clear anyway). 404 for an unknown
   * or foreign sandbox. Returns the command's seq.
   */
  async enqueueCommand(userId: string, sandboxId: string, command: CommandInput, options: { seal?: boolean } = {}): Promise<number> {
    const rec = await this.deps.store.get(sandboxId);
    if (!rec || rec.userId !== userId || rec.deletedAt) throw notFound('Sandbox not found');
    const json = command.payload === undefined ? undefined : JSON.stringify(command.payload);
    const sealedPayload = json !== undefined && options.seal !== false ? await this.deps.sealer.seal(json, userId) : undefined;
    const payload = json !== undefined && options.seal === false ? json : undefined;
    const seq = await this.deps.store.nextCommandSeq(sandboxId);
    if (seq === undefined) throw notFound('Sandbox not found');
    await this.deps.store.putCommand({ sandboxId, seq, type: command.type, sealedPayload, payload, createdAt: this.iso() });
    return seq;
  }

  /** Status and reason of sandboxes by id, without opening anything sealed (for other services' views). */
  async statuses(ids: string[]): Promise<Map<string, { id: string; userId: string; status: SandboxStatus; detail: string | null }>> {
    const found = await this.deps.store.batchGet(ids);
    const out = new Map<string, { id: string; userId: string; status: SandboxStatus; detail: string | null }>();
    for (const [id, r] of found) if (!r.deletedAt) out.set(id, { id, userId: r.userId, status: r.status, detail: r.detail ?? null });
    return out;
  }

  // --- Events and housekeeping ------------------------------------------------------------------

  /**
   * A process or task ended. For the current generation of a live sandbox: a crash becomes ERROR
   * with the reason, a stop that was asked for becomes PAUSED. Stale generations and sandboxes that
   * were already paused, failed or deleted are left alone, so a repeated event does no harm.
   */
  async handleInstanceStopped(event: InstanceStopped): Promise<SandboxStatus | undefined> {
    const t = await this.transition(event.sandboxId, (rec) =>
      rec.generation !== event.generation || !isLive(rec.status) ? 'skip' : event.requested ? toPaused(event.detail) : toError(event.detail),
    );
    if (!t?.changed) return undefined;
    if (t.record.status === 'ERROR') logger.warn('sandbox.failed', { sandboxId: event.sandboxId, userId: t.record.userId, detail: event.detail });
    return t.record.status;
  }

  /** Continues an unfinished delete (e.g. when the Fargate workspace wipe task has stopped). */
  async continueDelete(sandboxId: string): Promise<boolean> {
    const rec = await this.deps.store.get(sandboxId);
    return rec?.deletedAt ? this.finishDelete(rec) : false;
  }

  /**
   * The scheduled sweep: pauses idle sandboxes, fails starts that never checked in, marks RUNNING
   * sandboxes whose process is gone as MISSING, finishes stalled deletes, and stops processes or
   * tasks that no live record owns. One failing item does not stop the others.
   */
  async sweep(now: Date = this.now()): Promise<SweepSummary> {
    const summary: SweepSummary = { paused: [], failed: [], missing: [], orphans: [], deleted: [] };
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
          if (t - Date.parse(rec.deletedAt) >= DELETE_RETRY_MS && (await this.finishDelete(rec))) summary.deleted.push(rec.id);
        } else if (rec.status === 'STARTING' && stuck(rec)) {
          const detail = `The sandbox did not check in within ${startTimeoutSeconds} seconds of starting`;
          if (await this.failIfCurrent(rec, detail, (cur) => cur.status === 'STARTING' && stuck(cur))) summary.failed.push(rec.id);
        } else if (rec.status === 'RUNNING' && idle(rec)) {
          const detail = `Paused after ${idleMinutes} minutes without agent activity`;
          if (await this.pauseRecord(rec.id, detail, { when: (cur) => cur.generation === rec.generation && idle(cur) })) summary.paused.push(rec.id);
        } else if (rec.status === 'RUNNING' && !instances.some((i) => i.sandboxId === rec.id && i.generation === rec.generation)) {
          const t2 = await this.transition(rec.id, (cur) =>
            cur.status === 'RUNNING' && cur.generation === rec.generation
              ? { status: 'MISSING', detail: 'The sandbox process or task no longer exists', ...notLive }
              : 'skip',
          );
          if (t2?.changed) summary.missing.push(rec.id);
        }
      } catch (err) {
        logger.error('Sweep step failed', { sandboxId: rec.id, error: err as Error });
      }
    }
    for (const inst of instances) {
      try {
        if (live.some((r) => r.id === inst.sandboxId && r.generation === inst.generation && !r.deletedAt && isLive(r.status))) continue;
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

  /** Pauses every live sandbox (the local server shutting down), so no process outlives it. */
  async suspendAll(detail: string): Promise<void> {
    const live = await this.deps.store.listLive();
    await Promise.all(live.filter((r) => !r.deletedAt).map((r) => this.pauseRecord(r.id, detail).catch(() => false)));
  }

  // --- Internals --------------------------------------------------------------------------------

  private iso(): string {
    return this.now().toISOString();
  }

  /** The record a session key belongs to, in any state (so a stale program can be told to stop). */
  private async keyOwner(sandboxId: string, key: string | undefined): Promise<SandboxRecord | null> {
    if (!key) return null;
    const rec = await this.deps.store.get(sandboxId);
    return rec && !rec.deletedAt && sameHash(rec.sessionKeyHash, sha256(key)) ? rec : null;
  }

  /**
   * Reads, decides and writes conditionally on the version read, retrying on a lost race. With
   * `userId`, an unknown, foreign or deleted sandbox is a 404; without, it is `undefined`.
   */
  private async transition(id: string, decide: (rec: SandboxRecord) => Decision, options: { userId?: string } = {}): Promise<Transition | undefined> {
    for (let attempt = 0; attempt < 40; attempt++) {
      const rec = await this.deps.store.get(id);
      if (!rec || rec.deletedAt || (options.userId !== undefined && rec.userId !== options.userId)) {
        if (options.userId !== undefined) throw notFound('Sandbox not found');
        return undefined;
      }
      const patch = decide(rec);
      if (patch === 'skip') return { record: rec, previous: rec, changed: false };
      const updated = await this.deps.store.update(id, rec.version, patch);
      if (updated) return { record: updated, previous: rec, changed: true };
      await sleep(2 + Math.random() * 10 * Math.min(attempt + 1, 8));
    }
    throw conflict('The sandbox is being changed by other requests; try again');
  }

  /** Pauses a live sandbox and stops its process; false when it was not live (or `when` said no). */
  private async pauseRecord(id: string, detail: string | undefined, options: { userId?: string; when?: (rec: SandboxRecord) => boolean } = {}): Promise<boolean> {
    const t = await this.transition(id, (rec) => (isLive(rec.status) && (options.when?.(rec) ?? true) ? toPaused(detail) : 'skip'), options);
    if (!t?.changed) return false;
    await this.stopQuietly(instanceOf(t.previous));
    return true;
  }

  /** Turns the same generation of a live sandbox to ERROR and stops whatever runs for it. */
  private async failIfCurrent(rec: SandboxRecord, detail: string, when: (cur: SandboxRecord) => boolean = () => true): Promise<boolean> {
    const t = await this.transition(rec.id, (cur) => (cur.generation === rec.generation && isLive(cur.status) && when(cur) ? toError(detail) : 'skip'));
    if (!t?.changed) return false;
    logger.warn('sandbox.failed', { sandboxId: rec.id, userId: rec.userId, detail });
    await this.stopQuietly(instanceOf(t.previous));
    return true;
  }

  /**
   * Pauses the user's least recently active live sandboxes until starting `keepId` stays within
   * MAX_RUNNING_SANDBOXES. Two racing starts pick the same oldest sandbox, so they do not overshoot.
   */
  private async makeRoom(userId: string, keepId: string): Promise<string[]> {
    const others = (await this.deps.store.listLiveByUser(userId))
      .filter((r) => r.id !== keepId)
      .sort((a, b) => a.lastActivityAt.localeCompare(b.lastActivityAt));
    const excess = others.length + 1 - this.deps.config.maxRunning;
    const paused: string[] = [];
    for (const rec of others.slice(0, Math.max(0, excess))) {
      const detail = `Paused to stay within ${this.deps.config.maxRunning} running sandboxes per user`;
      if (await this.pauseRecord(rec.id, detail)) paused.push(rec.id);
    }
    return paused;
  }

  /**
   * Runs generation `record.generation` and records the outcome, if that generation is still the
   * current one. A start that lost a race (paused or deleted meanwhile) stops what it started.
   */
  private async launch(record: SandboxRecord, spec: SandboxSpec, enrollmentToken: string, bridgeUrl: string): Promise<SandboxRecord> {
    const generation = record.generation;
    let started: { ref: string; state: RuntimeState } | undefined;
    let failure: SandboxStartError | undefined;
    try {
      started = await this.deps.runtime.start({
        sandboxId: record.id,
        userId: record.userId,
        generation,
        spec,
        enrollmentToken,
        bridgeUrl,
        state: record.runtimeState,
      });
    } catch (err) {
      failure = err instanceof SandboxStartError ? err : new SandboxStartError(`The sandbox could not be started: ${(err as Error).message}`);
    }
    const state = started?.state ?? failure!.state;
    let current = false;
    const t = await this.transition(record.id, (rec) => {
      current = rec.generation === generation && isLive(rec.status);
      const patch: SandboxPatch = sameState(rec.runtimeState, state) ? {} : { runtimeState: state };
      if (current && started && rec.runtimeRef !== started.ref) patch.runtimeRef = started.ref;
      if (current && failure) Object.assign(patch, toError(failure.detail));
      return Object.keys(patch).length ? patch : 'skip';
    });
    if (failure && current) logger.warn('sandbox.failed', { sandboxId: record.id, userId: record.userId, detail: failure.detail });
    if (started && !current) {
      const instance = { sandboxId: record.id, generation, ref: started.ref, state };
      // Deleted meanwhile: the delete's clean-up may have run before this start, so clean up again.
      if (t) await this.stopQuietly(instance);
      else await this.deps.runtime.destroy(instance).catch((err: unknown) => logger.error('Clean-up after a lost start failed', { sandboxId: record.id, error: err as Error }));
    }
    return t?.record ?? record;
  }

  /** Runs the runtime's clean-up; removes the record once it is complete. False when it continues later. */
  private async finishDelete(rec: SandboxRecord): Promise<boolean> {
    try {
      const out = await this.deps.runtime.destroy(instanceOf(rec));
      if (out.done) {
        await this.deps.store.remove(rec.id);
        return true;
      }
      if (!sameState(rec.runtimeState, out.state)) await this.deps.store.update(rec.id, rec.version, { runtimeState: out.state });
    } catch (err) {
      logger.error('Sandbox clean-up failed; the sweeper will retry', { sandboxId: rec.id, error: err as Error });
    }
    return false;
  }

  private async stopQuietly(instance: InstanceRef): Promise<void> {
    try {
      await this.deps.runtime.stop(instance);
    } catch (err) {
      // The sweeper's orphan pass stops it later; the record is already right.
      logger.error('Stopping a sandbox failed', { sandboxId: instance.sandboxId, error: err as Error });
    }
  }

  private stopCommand(reason: string): SandboxCommand {
    return { seq: 0, type: 'stop', payload: { reason }, created_at: this.iso() };
  }

  private async openCommand(c: StoredCommand, userId: string): Promise<SandboxCommand> {
    const payload =
      c.sealedPayload !== undefined ? (JSON.parse(await this.deps.sealer.open(c.sealedPayload, userId)) as unknown)
      : c.payload !== undefined ? (JSON.parse(c.payload) as unknown)
      : null;
    return { seq: c.seq, type: c.type, payload, created_at: c.createdAt };
  }

  private async view(rec: SandboxRecord): Promise<SandboxInfo> {
    const running = rec.status === 'RUNNING';
    return {
      id: rec.id,
      created_by_user_id: rec.userId,
      sandbox_spec_id: rec.specId,
      status: rec.status,
      // The sandbox's own key reaches only the sandbox (at check-in): with it, the start-config
      // webhook hands out the user's secrets. Clients use conversation-scoped keys instead.
      session_api_key: null,
      exposed_urls: running ? [] : null,
      detail: rec.detail ?? null,
      created_at: rec.createdAt,
      updated_at: rec.updatedAt,
      last_activity_at: rec.lastActivityAt,
    };
  }
}
