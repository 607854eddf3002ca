import { randomUUID } from 'node:crypto';
import { invalidField, notFound } from '#shared/http/errors.ts';
import type { CommandInput } from '#shared/protocol.ts';
import { isLive, type SandboxInfo } from '#shared/sandboxes/model.ts';
import { newToken, SandboxLifecycle, sha256, type SandboxServiceDeps } from '#shared/sandboxes/lifecycle.ts';
import { NOTICE_STATE, type LaunchOptions } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import { LIVE_SHARD, type SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import { SandboxQueue } from '#shared/sandboxes/queue.ts';
import { limitRefusal, type Tenant } from '#shared/plans/limits.ts';
import { limitReached, readStanding, standingOf } from '#shared/usage/standing.ts';
import { DEFAULT_PLANS } from '#shared/plans/model.ts';

/** A new sandbox's id: 32 hex digits. */
const newSandboxId = () => randomUUID().replaceAll('-', '');

/** The user's API: search, start, pause, resume, delete; a start's commands and statuses through its `SandboxQueue`. */
export class SandboxService {
  private readonly lifecycle: SandboxLifecycle;
  private readonly queue: SandboxQueue;

  constructor(private readonly deps: SandboxServiceDeps) {
    this.lifecycle = new SandboxLifecycle(deps);
    this.queue = new SandboxQueue(deps);
  }

  /** The user's sandboxes, newest first. */
  async search(
    userId: string,
    pageId: string | undefined,
    limit: number,
  ): Promise<{ items: SandboxInfo[]; next_page_id: string | null }> {
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

  /**
   * Starts a sandbox; `paused` names sandboxes paused to stay within the per-user limit. The
   * tenant's plan refuses first (402): a resource factor above `max_resource_factor`, or no running
   * slot left in the organization (`max_running_sandboxes`, taken before the record is written).
   * `given` (a conversation's start): the launch options from the settings the caller read already,
   * the new sandbox's id (so the caller's records name it before it exists), and its first commands,
   * queued with the record before anything runs (no read of the record, nothing to push yet).
   */
  async start(
    userId: string,
    specId: string | undefined,
    host: string | undefined,
    tenant: Tenant,
    given: { options?: LaunchOptions; id?: string; commands?: CommandInput[] } = {},
  ): Promise<{ sandbox: SandboxInfo; paused: string[] }> {
    const spec = specId === undefined ? this.deps.specs.defaultSpec() : this.deps.specs.get(specId);
    if (!spec) throw invalidField(['query', 'sandbox_spec_id'], `Unknown sandbox spec "${specId}"`, specId);
    const bridgeUrl = this.deps.bridgeUrl(host);
    // Read beside the plan's own reads (reserveSlot): one round trip, not two, before the slot is taken.
    const options = await this.reserveSlot(tenant, given.options ?? this.launchOptions(userId), userId);
    const now = this.lifecycle.iso();
    const enrollment = newToken('enr');
    const commands = given.commands ?? [];
    const record: SandboxRecord = {
      id: given.id ?? newSandboxId(),
      userId,
      orgId: tenant.orgId,
      ...(tenant.plan ? { plan: tenant.plan } : {}),
      resourceFactor: options.resourceFactor ?? 1,
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
      ...(commands.length ? { commandSeq: commands.length } : {}),
    };
    try {
      await this.deps.store.create(record);
    } catch (err) {
      await this.deps.store.releaseRunning(tenant.orgId);
      throw err;
    }
    // Should a put fail, the record stays STARTING with nothing launched: the sweeper fails it at the
    // start time-out and gives its slot back, as for a start that died here. The commands and the room
    // for the new sandbox (other sandboxes paused) are independent writes: both at once, both before the launch.
    const [, paused] = await Promise.all([
      (async () => {
        for (const [i, command] of commands.entries())
          await this.deps.store.putCommand({
            sandboxId: record.id,
            seq: i + 1,
            type: command.type,
            payload: command.payload === undefined ? undefined : JSON.stringify(command.payload),
            createdAt: now,
          });
      })(),
      this.makeRoom(userId, record.id),
    ]);
    const launched = await this.lifecycle.launch(record, spec, enrollment, bridgeUrl, options);
    return { sandbox: await this.view(launched), paused };
  }

  /** Pauses (stops the process, keeps the workspace). Pausing a sandbox that is not live changes nothing. */
  async pause(userId: string, sandboxId: string): Promise<void> {
    await this.lifecycle.pauseRecord(sandboxId, undefined, { userId });
  }

  /**
   * Pauses every live sandbox of the user, workspaces kept, with `detail` saying why (a suspension,
   * a removal from an organization): one pause mechanism whoever pauses. The ids it paused.
   */
  async pauseAll(userId: string, detail: string): Promise<string[]> {
    const paused: string[] = [];
    for (const rec of await this.deps.store.listLiveByUser(userId))
      if (await this.lifecycle.pauseRecord(rec.id, detail)) paused.push(rec.id);
    return paused;
  }

  /** Deletes every sandbox of the user (their account is being deleted): stopped, workspaces and snapshots removed. */
  async deleteAll(userId: string): Promise<string[]> {
    const deleted: string[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.deps.store.listByUser(userId, 100, startKey);
      for (const rec of page.items)
        if (!rec.deletedAt) {
          await this.delete(userId, rec.id);
          deleted.push(rec.id);
        }
      startKey = page.lastKey;
    } while (startKey);
    return deleted;
  }

  /**
   * Resumes on the same workspace (the plan's limits refuse as for a start). Resuming a live sandbox
   * changes nothing.
   */
  async resume(
    userId: string,
    sandboxId: string,
    host: string | undefined,
    tenant: Tenant,
    /** The launch options from the settings the caller read already (a conversation's start). */
    given?: LaunchOptions,
  ): Promise<{ paused: string[] }> {
    const bridgeUrl = this.deps.bridgeUrl(host);
    const found = await this.deps.store.get(sandboxId);
    if (!found || found.deletedAt || found.userId !== userId) throw notFound('Sandbox not found');
    if (isLive(found.status)) return { paused: [] };
    const options = await this.reserveSlot(tenant, given ?? this.launchOptions(userId));
    let enrollment = '';
    let t: { record: SandboxRecord; changed: boolean } | undefined;
    try {
      t = await this.lifecycle.transition(
        sandboxId,
        (rec) => {
          if (isLive(rec.status)) return 'skip';
          enrollment = newToken('enr');
          const now = this.lifecycle.iso();
          return {
            status: 'STARTING',
            orgId: tenant.orgId,
            plan: tenant.plan ?? null,
            resourceFactor: options.resourceFactor ?? 1,
            runningAt: null,
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
        { userId, known: found },
      );
    } catch (err) {
      await this.deps.store.releaseRunning(tenant.orgId);
      throw err;
    }
    // A racing resume got there first: the slot taken for this one goes back.
    if (!t?.changed) {
      await this.deps.store.releaseRunning(tenant.orgId);
      return { paused: [] };
    }
    const paused = await this.makeRoom(userId, sandboxId);
    const spec = this.deps.specs.get(t.record.specId);
    if (!spec) {
      await this.lifecycle.failIfCurrent(
        t.record,
        `Sandbox spec "${t.record.specId}" no longer exists; start a new sandbox`,
      );
      return { paused };
    }
    await this.lifecycle.launch(t.record, spec, enrollment, bridgeUrl, options);
    return { paused };
  }

  /** Stops the sandbox, removes its workspace, its command queue and its record. */
  async delete(userId: string, sandboxId: string): Promise<void> {
    const t = await this.lifecycle.transition(
      sandboxId,
      () => ({
        deletedAt: this.lifecycle.iso(),
        liveShard: LIVE_SHARD,
        liveUserId: null,
        enrollmentHash: null,
        sessionKeyHash: null,
        sessionKeySealed: null,
      }),
      { userId },
    );
    await this.deps.store.deleteAllCommands(sandboxId);
    await this.lifecycle.finishDelete(t!.record);
  }

  /** Queues a command for the user's sandbox and pushes it (`SandboxQueue.enqueueCommand`). */
  enqueueCommand(userId: string, sandboxId: string, command: CommandInput): Promise<number> {
    return this.queue.enqueueCommand(userId, sandboxId, command);
  }

  /** Status and reason of sandboxes by id (`SandboxQueue.statuses`). */
  statuses(ids: string[]): ReturnType<SandboxQueue['statuses']> {
    return this.queue.statuses(ids);
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
      if (await this.lifecycle.pauseRecord(rec.id, detail)) paused.push(rec.id);
    }
    return paused;
  }

  /**
   * The plan's refusals before anything runs: the resource factor, for a new sandbox (`newFor`, its
   * user) the paused sandboxes the user keeps, then one of the organization's running slots (a
   * conditional counter: of 20 racing starts for the last slot exactly one gets it). Returns the launch
   * options, read (when a promise) at once with the refusals' own reads.
   */
  private async reserveSlot(
    tenant: Tenant,
    launchOptions: LaunchOptions | Promise<LaunchOptions>,
    newFor?: string,
  ): Promise<LaunchOptions> {
    const plan = (this.deps.plans ?? DEFAULT_PLANS).plan(tenant.plan);
    const day = this.lifecycle.iso().slice(0, 10);
    // The reads the refusals need, at once (each refusal still comes in its order below).
    const [options, paused, standing] = await Promise.all([
      launchOptions,
      newFor !== undefined ? this.deps.store.countPaused(newFor) : undefined,
      plan.on_limit === 'stop' || plan.prepaid
        ? readStanding(this.deps.usage!, tenant.orgId, day, plan.prepaid)
        : undefined,
    ]);
    const factor = options.resourceFactor ?? 1;
    if (factor > plan.max_resource_factor)
      throw limitRefusal(
        'max_resource_factor',
        plan.max_resource_factor,
        factor,
        `Your plan allows a resource factor of at most ${plan.max_resource_factor}; remote_runtime_resource_factor is ${factor}`,
      );
    // Every sandbox ends up paused unless deleted, so a new one is refused while the user keeps the
    // plan's number of paused ones (a count at the start: starts racing past it are bounded by the
    // running limit). Resuming one lowers the count, so a resume is never refused for it.
    if (paused !== undefined) {
      if (paused >= plan.max_paused_sandboxes)
        throw limitRefusal(
          'max_paused_sandboxes',
          plan.max_paused_sandboxes,
          paused,
          `Your plan keeps at most ${plan.max_paused_sandboxes} paused sandboxes per user and you have ${paused}: delete one (or resume one) first`,
        );
    }
    // Spent prepaid credits refuse whatever on_limit says; the monthly limits only with `stop`.
    if (standing !== undefined) {
      const reached = limitReached(plan, standingOf(standing, day));
      if (reached && (plan.on_limit === 'stop' || reached.code === 'credits_exhausted'))
        throw limitRefusal(reached.code, reached.limit, reached.used, `Refused: ${reached.message}`);
    }
    const { granted, used } = await this.deps.store.reserveRunning(tenant.orgId, plan.max_running_sandboxes);
    if (!granted)
      throw limitRefusal(
        'max_running_sandboxes',
        plan.max_running_sandboxes,
        used,
        `Your organization's plan allows ${plan.max_running_sandboxes} running sandboxes and ${used} are running: pause or delete one first`,
      );
    return options;
  }

  private launchOptions(userId: string): Promise<LaunchOptions> {
    return this.deps.launchOptions?.(userId) ?? Promise.resolve({});
  }

  private async view(rec: SandboxRecord): Promise<SandboxInfo> {
    const running = rec.status === 'RUNNING';
    return {
      id: rec.id,
      created_by_user_id: rec.userId,
      sandbox_spec_id: rec.specId,
      status: rec.status,
      // The sandbox's own key reaches only the sandbox (at check-in): with it, the start-config
      // bridge route hands out the user's secrets. Clients use conversation-scoped keys instead.
      session_api_key: null,
      exposed_urls: running ? [] : null,
      // A runtime's notice about the running generation (on-demand instead of Spot, images that apply only on AWS).
      detail: rec.detail ?? (isLive(rec.status) ? rec.runtimeState?.[NOTICE_STATE] : undefined) ?? null,
      // The process runtime records how it contained the last start; Fargate tasks always are.
      contained: rec.runtimeState?.containment !== 'none',
      created_at: rec.createdAt,
      updated_at: rec.updatedAt,
      last_activity_at: rec.lastActivityAt,
      start_phases: rec.phases ?? null,
    };
  }
}
