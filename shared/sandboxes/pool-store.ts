import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';

/**
 * Storage of the warm pool (table `pool`): a pool record per spec and an item per standby. Every
 * state change of a standby is one conditional write on its item (the claim above all: one
 * conditional write on a ready standby whose heartbeat is fresh). Adapter: `DynamoPoolStore`.
 */

/**
 * `booting`: started, not checked in yet. `ready`: checked in with its pool credential, waiting.
 * `claimed`: bound to a sandbox (the binding is on the item), not yet taken. `delivered`: the standby
 * took its binding (its pool credential is gone with it); from here it is the sandbox's task and
 * never returns to the pool. `draining`: being stopped by the sweep (idle, old revision, surplus).
 */
export type StandbyStatus = 'booting' | 'ready' | 'claimed' | 'delivered' | 'draining';

export interface StandbyRecord {
  /** `sb_<32 hex>`. */
  id: string;
  specId: string;
  /** = specId on every standby item: the sparse index `bySpec`. */
  poolSpec: string;
  status: StandbyStatus;
  version: number;
  createdAt: string;
  updatedAt: string;
  /** The last pool check-in or wait call: a claim takes only standbys heard from within 30 s. */
  heartbeatAt?: string;
  /** SHA-256 of the standby's pool credential; removed when the binding is delivered. */
  tokenHash?: string;
  /** The standby's RSA public key (SPKI PEM, sent at its pool check-in): the binding's token is sealed to it. */
  publicKey?: string;
  /** The runtime's handle (pid, task ARN). */
  ref?: string;
  /**
   * The pool socket (AWS): the bridge socket's connection the standby opened with its pool credential,
   * recorded by `$connect`; the claim pushes it a wake-up. Locally none: standbys long-poll.
   */
  connectionId?: string;
  /** What the standby was started from (the task definition ARN; locally the spec as configured): a change drains it. */
  revision: string;
  /** Fargate capacity provider it runs on (`FARGATE` or `FARGATE_SPOT`); locally `process`. */
  capacity: string;
  /** The claim: which sandbox and generation the standby became, and when. */
  sandboxId?: string;
  generation?: number;
  claimedAt?: string;
  /** The binding as JSON (`PoolBinding` of shared/protocol.ts), its enrollment token sealed to `publicKey`. */
  binding?: string;
}

export type StandbyPatch = { [K in keyof StandbyRecord]?: StandbyRecord[K] | null };

/** The pool record of a spec: when a start it could have served last came (the sweep drains after `idleMinutes`). */
export interface PoolRecord {
  id: string;
  specId: string;
  lastStartAt: string;
  /** Where the last start's sandbox reached the API: where the standbys started after it check in. */
  bridgeUrl: string;
  /**
   * The pool's places, `0` to `size - 1`: which standby each was last given to (`takeSlot`). A place is
   * free when that standby no longer waits (claimed, drained, gone), so racing refills never start more
   * than `size`: each new standby first takes a free place in one conditional write.
   */
  slots?: Record<string, string>;
}

export const poolRecordId = (specId: string) => `pool:${specId}`;

/** A claim takes only a standby heard from within this long. */
export const FRESH_HEARTBEAT_MS = 30_000;
/**
 * A claimed standby that has not taken its binding (checked in as the sandbox) by then is replaced by
 * a cold start (the sweep's check, in shared/sandboxes/housekeeping.ts, which carries no pool code).
 */
export const BINDING_ACK_MS = 10_000;
/** A ready standby not heard from for this long is gone (its task or process ended unseen): stopped and forgotten. */
export const LOST_STANDBY_MS = 90_000;

/** Whether a spec keeps a pool at all. */
export const hasPool = (spec: SandboxSpec) => (spec.warmPool?.size ?? 0) > 0;

export interface PoolStore {
  /** Stores a new standby; throws if the id exists. */
  createStandby(record: StandbyRecord): Promise<void>;
  /** Strongly consistent. */
  getStandby(id: string): Promise<StandbyRecord | undefined>;
  /** A spec's standbys, oldest first (the index: a claim's condition re-checks what it reads here). */
  listStandbys(specId: string): Promise<StandbyRecord[]>;
  /**
   * Applies `patch` (version + 1) if the item's version is still `expectedVersion`; with `claimable`,
   * only if it is also `ready` with a heartbeat later than `claimable.heardAfter` (the claim).
   * Returns the new item, or undefined when the condition failed.
   */
  updateStandby(
    id: string,
    expectedVersion: number | undefined,
    patch: StandbyPatch,
    claimable?: { heardAfter: string },
  ): Promise<StandbyRecord | undefined>;
  /**
   * Takes a claimed standby's binding: `claimed` becomes `delivered` and the pool credential is removed,
   * in one conditional write. Returns the new item (its `binding`), or undefined when it was not claimed.
   */
  deliverBinding(id: string): Promise<StandbyRecord | undefined>;
  /** Records a heartbeat of a `ready` standby (no version change). False when it is not ready. */
  heartbeat(id: string, at: string): Promise<boolean>;
  removeStandby(id: string): Promise<void>;
  getPool(specId: string): Promise<PoolRecord | undefined>;
  /** Sets the pool's `lastStartAt` and `bridgeUrl` (creating the record), never moving it backwards. */
  touchPool(specId: string, at: string, bridgeUrl: string): Promise<void>;
  /**
   * Gives place `slot` of an existing pool record to standby `to` if it is still `from`'s (undefined:
   * never given); false when another refill took it first.
   */
  takeSlot(specId: string, slot: number, from: string | undefined, to: string): Promise<boolean>;
  /**
   * Why the account may not be given a sandbox (its user or organization is suspended), read strongly
   * consistent (the `users` and `orgs` items in one BatchGetItem); undefined when it may. The claim's
   * check, so it lives with the claim's store: only the functions that claim read those tables.
   */
  suspension(userId: string, orgId: string | undefined): Promise<string | undefined>;
}

/** The pause detail of a start refused at the claim: the same words as the suspension's own pause. */
export const SUSPENDED_DETAIL = {
  user: 'Paused: the account is suspended',
  org: 'Paused: the organization is suspended',
} as const;
