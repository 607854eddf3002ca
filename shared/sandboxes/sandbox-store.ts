import type { SandboxStatus } from '#shared/protocol.ts';

/** The one partition of the sparse `live` index (a few thousand live sandboxes fit one partition easily). */
export const LIVE_SHARD = 'live';

/** The stored sandbox item (table `sandboxes`; README.md describes each attribute). */
export interface SandboxRecord {
  id: string;
  userId: string;
  /**
   * The organization whose running-sandbox slot this sandbox holds while live (set by the start or
   * resume that reserved it); absent on records from before the per-organization limit (they hold none).
   */
  orgId?: string;
  specId: string;
  status: SandboxStatus;
  /** Incremented by every state change: the condition of the next one. */
  version: number;
  /** Incremented by every start/resume: tells a current process or task from a stale one. */
  generation: number;
  createdAt: string;
  updatedAt: string;
  lastActivityAt: string;
  /** When the current generation was started (stuck-start detection, start latency). */
  startedAt?: string;
  /** When the current generation checked in (RUNNING): where its compute billing starts (docs/billing.md). */
  runningAt?: string;
  /** The plan the organization was on when the current generation started (the heartbeat's monthly limits read it). */
  plan?: string;
  /** The resource factor the current generation was started with (1 when absent). */
  resourceFactor?: number;
  detail?: string;
  /** Sparse index keys: set only while STARTING/RUNNING (and, `liveShard` only, while a delete is unfinished). */
  liveShard?: string;
  liveUserId?: string;
  /** SHA-256 of the one-time enrollment token of the current generation; removed at check-in. */
  enrollmentHash?: string;
  /** SHA-256 of the session key, for authentication. */
  sessionKeyHash?: string;
  /** The session key sealed for the owner: never in a response; operators' tooling and tests read it. */
  sessionKeySealed?: string;
  /** The runtime's handle on the current generation (a pid, a task ARN). */
  runtimeRef?: string;
  /** What the runtime keeps per sandbox across generations (e.g. the current snapshot's key, a notice). */
  runtimeState?: Record<string, string>;
  /** Counter of queued commands (atomic ADD, never part of a versioned write). */
  commandSeq?: number;
  /**
   * The API Gateway WebSocket connection the current program opened with its session key (AWS): where
   * queued commands are pushed. Written by the socket's `$connect`, never part of a versioned write.
   */
  commandSocket?: string;
  agentVersion?: string;
  /** How the current generation's start went, phase by phase (`GET /api/v1/sandboxes` shows it as `start_phases`). */
  phases?: StartPhases;
  /** Set when a delete began; the item is hidden from then on and removed when clean-up is done. */
  deletedAt?: string;
}

/**
 * The id of an organization's running-sandbox counter item in the sandboxes table (never a sandbox's
 * id: those are 32 hex digits). Kept here, not in `orgs`, so every function that changes a sandbox's
 * state moves the counter with the grant it already has.
 */
export const runningCounterId = (orgId: string) => `#running#${orgId}`;

/** The value of `counterShard` on running-slot counters: their one partition of index `counters`. */
export const RUNNING_COUNTERS = 'running';

/** An organization's running-slot counter as read (`changedAt`: its last reserve or release; absent on old items). */
export interface RunningCounter {
  orgId: string;
  running: number;
  changedAt?: string;
}

/**
 * One start's phases (milliseconds), as the record keeps and the API shows them. Warm: the claim,
 * then the claimed standby's check-in with its binding (`check_in_ms`, from the claim); cold: the
 * RunTask call (locally the spawn), PROVISIONING and PENDING (the image pull; AWS, from ECS's task
 * timestamps), container start to check-in. `restore_ms` is the snapshot restore after the check-in
 * (AWS), `total_ms` the request to RUNNING plus the restore. `claimed_at` is when a claimed standby
 * became the user's: billing starts there, not while it waited in the pool.
 */
export interface StartPhases {
  warm: boolean;
  /** Why a start was cold (no pool, none ready, another image, a standby that did not take its binding...). */
  cold_reason?: string;
  requested_at: string;
  claim_ms?: number;
  claimed_at?: string;
  run_task_ms?: number;
  provisioning_ms?: number;
  pending_ms?: number;
  container_started_at?: string;
  check_in_ms?: number;
  restore_ms?: number;
  total_ms?: number;
}

/** A set of attribute changes; `null` removes the attribute. */
export type SandboxPatch = { [K in keyof SandboxRecord]?: SandboxRecord[K] | null };

export interface StoredCommand {
  sandboxId: string;
  seq: number;
  type: string;
  /** Only in a command queued by a deployment from before payloads stopped carrying secrets: still opened when read. */
  sealedPayload?: string;
  /** The payload as JSON (no command carries a secret). */
  payload?: string;
  createdAt: string;
}

/**
 * Storage of sandboxes and their command queues. Every state change is one conditional write on
 * one item (dynalite has no transactions). Adapter: `DynamoSandboxStore`.
 */
export interface SandboxStore {
  /** Stores a new record; throws if the id exists. */
  create(record: SandboxRecord): Promise<void>;
  /** The record (strongly consistent), or undefined. */
  get(id: string): Promise<SandboxRecord | undefined>;
  /** The records that exist among `ids` (duplicates allowed), keyed by id. */
  batchGet(ids: string[]): Promise<Map<string, SandboxRecord>>;
  /** A page of a user's sandboxes, newest first. */
  listByUser(
    userId: string,
    limit: number,
    startKey?: Record<string, unknown>,
  ): Promise<{ items: SandboxRecord[]; lastKey?: Record<string, unknown> }>;
  /** A user's STARTING/RUNNING sandboxes, least recently active first. */
  listLiveByUser(userId: string): Promise<SandboxRecord[]>;
  /** How many PAUSED sandboxes the user keeps (not being deleted). */
  countPaused(userId: string): Promise<number>;
  /** Every STARTING/RUNNING sandbox and unfinished delete, least recently active first. */
  listLive(): Promise<SandboxRecord[]>;
  /**
   * Applies `patch` (and version + 1, updatedAt) if the stored version is still `expectedVersion`.
   * Returns the new record, or undefined when another change got there first (or the item is gone).
   */
  update(id: string, expectedVersion: number, patch: SandboxPatch): Promise<SandboxRecord | undefined>;
  /** Sets lastActivityAt when the sandbox is RUNNING (no version change: activity is not a state change). */
  touchActivity(id: string, at: string): Promise<boolean>;
  /**
   * Takes one of the organization's running-sandbox slots if fewer than `limit` are taken (one
   * conditional ADD: racing starts never overshoot). `used` is the count after (granted) or as found.
   */
  reserveRunning(orgId: string, limit: number): Promise<{ granted: boolean; used: number }>;
  /** Gives a slot back (never below zero). */
  releaseRunning(orgId: string): Promise<void>;
  /** The organization's slots taken now. */
  runningOf(orgId: string): Promise<number>;
  /** The organization's counter (strongly consistent), or undefined when it has none. */
  runningCounter(orgId: string): Promise<RunningCounter | undefined>;
  /** The organizations that have a counter, a page at a time (index `counters`). */
  runningCounterOrgs(): AsyncIterable<string[]>;
  /**
   * The daily reconcile's repair: sets the counter to `value` if it is still as `seen` (count and
   * `changedAt`); false when a start or release changed it meanwhile.
   */
  setRunning(orgId: string, seen: RunningCounter | undefined, value: number): Promise<boolean>;
  /** Removes the item if it is marked deleted. */
  remove(id: string): Promise<void>;
  /** The next command number of a sandbox that exists and is not being deleted; undefined otherwise. */
  nextCommandSeq(id: string): Promise<number | undefined>;
  putCommand(command: StoredCommand): Promise<void>;
  /** Records the program's command socket if the sandbox is RUNNING under the session key `sessionKeyHash`. */
  setCommandSocket(id: string, sessionKeyHash: string, connectionId: string): Promise<boolean>;
  /** Forgets `connectionId` (gone) unless a newer connection replaced it. */
  clearCommandSocket(id: string, connectionId: string): Promise<void>;
  /** The oldest `limit` queued commands. */
  listCommands(sandboxId: string, limit: number): Promise<StoredCommand[]>;
  /** Idempotent. */
  deleteCommand(sandboxId: string, seq: number): Promise<void>;
  deleteAllCommands(sandboxId: string): Promise<void>;
  /** One queued command, or undefined once it was acknowledged or removed. */
  getCommand(sandboxId: string, seq: number): Promise<StoredCommand | undefined>;
  /**
   * Keeps the program's reply to command `seq` (a workspace read) until the route waiting for it
   * takes it; false when a reply is there already (the first one counts).
   */
  putReply(sandboxId: string, seq: number, body: string, at: string): Promise<boolean>;
  /** The reply to command `seq`, or undefined while there is none. */
  getReply(sandboxId: string, seq: number): Promise<string | undefined>;
  /** Idempotent. */
  deleteReply(sandboxId: string, seq: number): Promise<void>;
}
