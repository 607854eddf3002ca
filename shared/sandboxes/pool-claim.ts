import { constants, publicEncrypt } from 'node:crypto';
import { logger } from '#shared/logging.ts';
import type { PoolBinding } from '#shared/protocol.ts';
import type { SpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';
import { commandQueued } from '#shared/sandboxes/command-signal.ts';
import type { CommandPush } from '#shared/sandboxes/command-push.ts';
import type { SandboxConfig } from '#shared/sandboxes/config.ts';
import { FRESH_HEARTBEAT_MS, hasPool, type PoolStore, type StandbyRecord } from '#shared/sandboxes/pool-store.ts';
import { STANDBY_STATE } from '#shared/sandboxes/lifecycle.ts';
import type { ClaimCandidate, RuntimeState, SandboxRuntime } from '#shared/sandboxes/runtime/sandbox-runtime.ts';

/** Starts the refill of a spec's pool without waiting for it (AWS: an asynchronous invoke; locally: in process). */
export interface PoolRefill {
  refill(specId: string): Promise<void>;
}

/** A claim whose standby must acknowledge its binding (check in as the sandbox) within BINDING_ACK_MS. */
export interface BindingClaim {
  sandbox_id: string;
  generation: number;
  standby_id: string;
}

/**
 * Sets off a claim's binding deadline without waiting for it: after BINDING_ACK_MS the sweeper's
 * `bindingDeadline` looks at that claim alone (AWS: a Step Functions execution, a Wait then the sweeper
 * invoked; locally a timer in the server). Without one, the per-minute sweep finds the overdue claim.
 */
export interface PoolDeadline {
  schedule(claim: BindingClaim): Promise<void>;
}

export interface WarmPoolDeps {
  store: PoolStore;
  runtime: SandboxRuntime;
  specs: SpecRegistry;
  config: SandboxConfig;
  /** Refills after a claim; null where nothing refills asynchronously (then the sweep tops up). */
  refill: PoolRefill | null;
  /** The claims' binding deadline; null where the sweep alone finds overdue claims (the sweeper's own retried starts). */
  deadline: PoolDeadline | null;
  /**
   * Wakes a claimed standby on its pool socket (AWS: PostToConnection on the bridge socket API); null where
   * standbys long-poll (locally) or the function holds no push (the sweeper: its claims' standbys take the
   * binding at their next heartbeat, within 20 s).
   */
  push: CommandPush | null;
  now?: () => Date;
}

/** A start served by a standby: the instance's handle and state, as `SandboxRuntime.start` returns them. */
export interface Claimed {
  standbyId: string;
  ref: string;
  state: RuntimeState;
  claimedAt: string;
  claimMs: number;
}

/** The in-process signal that wakes a standby's long-poll. */
export const wakeKey = (standbyId: string) => `pool:${standbyId}`;

/**
 * What the claim pushes on a standby's pool socket: fetch (the wait route with `wait=0`, which delivers the
 * binding once and kills the pool credential). The binding itself never travels over the socket.
 */
export const POOL_WAKE = '{"fetch":true}';

/**
 * The warm pool's claim, what the functions that start sandboxes carry of the pool (the standbys'
 * own routes, the refill and the sweep are \`WarmPool\`'s, shared/sandboxes/pool.ts). The design:
 * docs/architecture.md ("The warm pool").
 */
export class PoolClaims {
  protected readonly now: () => Date;

  constructor(protected readonly deps: WarmPoolDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * A standby for the start, or why it starts cold, or (`refused`) why it must not start at all: a
   * suspended account. That check reads the user and organization after the sandbox's record was
   * written, and a suspension writes the status before it pauses the user's live sandboxes; so a claim
   * racing a suspension is either refused here or its sandbox is paused by the suspension, which stops
   * the claimed standby (docs/architecture.md, "The warm pool").
   */
  async claim(
    start: ClaimCandidate & { enrollmentToken: string; bridgeUrl: string; orgId?: string },
  ): Promise<Claimed | { cold: string } | { refused: string }> {
    const began = performance.now();
    const { spec } = start;
    if (!hasPool(spec)) return { cold: `spec "${spec.id}" keeps no warm pool` };
    const standbys = this.deps.runtime.standbys;
    if (!standbys) return { cold: 'this runtime keeps no standbys' };
    // ECS fixes the image, the size overrides and the capacity provider at RunTask: a standby serves the spec as it is.
    const reason = start.options?.image
      ? `the settings ask for their own sandbox image (sandbox_${start.options.image.kind}_container_image)`
      : (start.options?.resourceFactor ?? 1) !== 1
        ? `the settings ask for resource factor ${start.options!.resourceFactor} (standbys run the spec's size)`
        : standbys.coldReason(start);
    const now = this.now();
    // At once, each one request: the account's status; the pool's last start (any start of the spec keeps
    // its pool from draining, and tells standbys where the API is); the standbys, when one could serve.
    const [suspended, , listed] = await Promise.all([
      this.deps.store.suspension(start.userId, start.orgId),
      this.deps.store.touchPool(spec.id, now.toISOString(), start.bridgeUrl),
      reason ? [] : this.deps.store.listStandbys(spec.id),
    ]);
    // A suspended account neither takes a standby nor starts cold instead.
    if (suspended) return { refused: suspended };
    if (reason) return { cold: reason };
    const heardAfter = new Date(now.getTime() - FRESH_HEARTBEAT_MS).toISOString();
    const revision = standbys.revision(spec);
    const candidates = listed.filter(
      (s) => s.status === 'ready' && s.publicKey && s.revision === revision && (s.heartbeatAt ?? '') > heardAfter,
    );
    // Racing starts try the candidates in different orders, so they rarely collide on one.
    for (const candidate of shuffle(candidates)) {
      const binding: PoolBinding = {
        sandbox_id: start.sandboxId,
        generation: start.generation,
        enrollment_sealed: seal(candidate.publicKey!, start.enrollmentToken),
        paths: standbys.bindingPaths(start.sandboxId),
      };
      const claimedAt = this.now().toISOString();
      const claimed = await this.deps.store.updateStandby(
        candidate.id,
        undefined,
        {
          status: 'claimed',
          sandboxId: start.sandboxId,
          generation: start.generation,
          claimedAt,
          binding: JSON.stringify(binding),
        },
        { heardAfter },
      );
      if (!claimed) continue;
      // Asked for beside the binding and awaited before answering (Lambda may freeze what is left running).
      const asked = Promise.all([
        this.refillSoon(spec.id),
        this.deadlineSoon({ sandbox_id: start.sandboxId, generation: start.generation, standby_id: claimed.id }),
      ]);
      try {
        const bound = await standbys.bindStandby(claimed.id, claimed.ref ?? '', start);
        commandQueued(wakeKey(claimed.id));
        await Promise.all([asked, this.wake(claimed)]);
        logger.info('pool.claimed', { standbyId: claimed.id, sandboxId: start.sandboxId, specId: spec.id });
        return {
          standbyId: claimed.id,
          ref: bound.ref,
          state: { ...bound.state, [STANDBY_STATE]: claimed.id },
          claimedAt,
          claimMs: Math.round(performance.now() - began),
        };
      } catch (err) {
        // Claimed but not bindable (its process just ended, a rename failed): it serves no one; start cold.
        logger.warn('pool.bind-failed', { standbyId: claimed.id, error: err as Error });
        await asked;
        await this.discard(claimed);
        return { cold: `the claimed standby could not be bound (${(err as Error).message})` };
      }
    }
    await this.refillSoon(spec.id);
    return { cold: candidates.length ? 'every ready standby was claimed by a racing start' : 'no standby was ready' };
  }

  /**
   * Best effort: a wake-up that fails (the connection gone, the push refused) fails no claim. The standby's
   * next heartbeat (the wait route, every 20 s) takes the binding, and the binding deadline (10 s) replaces a
   * standby that does not by a cold start.
   */
  protected async wake(s: StandbyRecord): Promise<void> {
    if (!s.connectionId || !this.deps.push) return;
    try {
      if (!(await this.deps.push.send(s.connectionId, POOL_WAKE)))
        logger.warn('pool.wake-gone', { standbyId: s.id, sandboxId: s.sandboxId });
    } catch (err) {
      logger.warn('pool.wake-failed', { standbyId: s.id, sandboxId: s.sandboxId, error: err as Error });
    }
  }

  /** Best effort: without its deadline a claim not acknowledged is found by the per-minute sweep. */
  protected async deadlineSoon(claim: BindingClaim): Promise<void> {
    try {
      await this.deps.deadline?.schedule(claim);
    } catch (err) {
      logger.warn('Setting off the binding deadline failed; the sweep finds the claim if it is not acknowledged', {
        sandboxId: claim.sandbox_id,
        error: err as Error,
      });
    }
  }

  protected async refillSoon(specId: string): Promise<void> {
    try {
      await (this.deps.refill ? this.deps.refill.refill(specId) : undefined);
    } catch (err) {
      logger.warn('Asking for a pool refill failed; the sweep tops the pool up', { specId, error: err as Error });
    }
  }

  protected async discard(s: StandbyRecord): Promise<void> {
    await this.deps.runtime.standbys?.stopStandby(s.id, s.ref);
    await this.deps.store.removeStandby(s.id);
  }
}

/** The enrollment token sealed to the standby's RSA key (OAEP, SHA-256): only that standby can open it. */
function seal(publicKeyPem: string, token: string): string {
  return publicEncrypt(
    { key: publicKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    Buffer.from(token),
  ).toString('base64');
}

function shuffle<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
