import type { PoolBinding } from '#shared/protocol.ts';
import type { SandboxSpec } from '#shared/sandbox-specs/model.ts';

/** What a runtime keeps per sandbox across generations (stored on the record, opaque to the service). */
export type RuntimeState = Record<string, string>;

/** One generation of one sandbox, as the service knows it. */
export interface InstanceRef {
  sandboxId: string;
  generation: number;
  /** The runtime's handle from `start` (pid, task ARN), when the service got to store it. */
  ref?: string;
  state?: RuntimeState;
}

export interface StartRequest {
  sandboxId: string;
  userId: string;
  /** Each start or resume is a new generation; a runtime never lets an older one replace a newer one. */
  generation: number;
  spec: SandboxSpec;
  /** One-time token the program exchanges for its session key at check-in. Never long-lived. */
  enrollmentToken: string;
  /** Where the program reaches the control plane. */
  bridgeUrl: string;
  state?: RuntimeState;
  /** What the user's settings ask of this start (images and size apply on AWS only). */
  options?: LaunchOptions;
}

/**
 * The user's sandbox settings as a start uses them. `image.kind`: `runtime` is an image used as it
 * is (it already holds our program, e.g. built FROM our image); `base` is any image our program is
 * brought into at start. `resourceFactor` multiplies the spec's CPU and memory (1, 2, 4 or 8).
 */
/** Runtime state: the capacity provider a Fargate task runs on (`FARGATE_SPOT` or `FARGATE`): Spot or not, for the ledger. */
export const CAPACITY_STATE = 'capacity';

export interface LaunchOptions {
  image?: { kind: 'runtime' | 'base'; uri: string };
  resourceFactor?: number;
}

/** The settings' `sandbox_runtime_container_image` wins over `sandbox_base_container_image` when both are set. */
export function launchOptionsOf(
  settings: {
    sandbox_runtime_container_image?: string | null;
    sandbox_base_container_image?: string | null;
    remote_runtime_resource_factor?: number | null;
  } | null,
): LaunchOptions {
  const runtime = settings?.sandbox_runtime_container_image?.trim();
  const base = settings?.sandbox_base_container_image?.trim();
  const factor = settings?.remote_runtime_resource_factor ?? 1;
  return {
    ...(runtime
      ? { image: { kind: 'runtime' as const, uri: runtime } }
      : base
        ? { image: { kind: 'base' as const, uri: base } }
        : {}),
    ...(factor !== 1 ? { resourceFactor: factor } : {}),
  };
}

/** The notice of a local sandbox started with settings that only AWS applies; undefined when there are none. */
export function awsOnlyNotice(options: LaunchOptions | undefined): string | undefined {
  const settings = [
    ...(options?.image ? [`sandbox_${options.image.kind}_container_image`] : []),
    ...(options?.resourceFactor && options.resourceFactor !== 1 ? ['remote_runtime_resource_factor'] : []),
  ];
  return settings.length
    ? `${settings.join(' and ')} apply only on AWS: this sandbox runs as a local process, without them`
    : undefined;
}

/** Where a runtime keeps a sentence the sandbox's record shows while nothing else is wrong (e.g. "ran on on-demand: Spot had no capacity"). */
export const NOTICE_STATE = 'notice';

/** A start that did not happen. `detail` is for the user; `state` is whatever was created before the failure. */
export class SandboxStartError extends Error {
  constructor(
    readonly detail: string,
    readonly state: RuntimeState = {},
    /** Worth trying again later (throttling, no capacity right now): the start flow retries with back-off. */
    readonly retryable = false,
  ) {
    super(detail);
    this.name = 'SandboxStartError';
  }
}

/** A process or task that ended, reported by the runtime (process exit, ECS "Task State Change"). */
export interface InstanceStopped {
  sandboxId: string;
  generation: number;
  /** True when the stop was asked for (pause, delete, a stop from the console); false for a crash. */
  requested: boolean;
  /** Not asked for, but no fault of the sandbox's (a Spot interruption): PAUSED, resumable, rather than ERROR. */
  resumable?: boolean;
  detail: string;
}

export interface RunningInstance {
  sandboxId: string;
  generation: number;
  ref: string;
}

/**
 * Runs sandbox programs. Every method is idempotent and safe to call for an instance that no
 * longer exists. Adapters: `ProcessSandboxRuntime` (child processes, local), `FargateSandboxRuntime`
 * (ECS tasks whose workspace is restored from, and saved to, S3 snapshots). One contract suite (test/contract/) runs against both.
 */
export interface SandboxRuntime {
  /**
   * Launches generation `req.generation` with its workspace (created on first start, kept after).
   * Returns when the process or task exists, not when the program is ready (it checks in).
   * Throws `SandboxStartError` with a readable detail on any failure.
   */
  start(req: StartRequest): Promise<{ ref: string; state: RuntimeState; runningAt?: string }>;
  /** Stops that generation (not a newer one), keeping the workspace. */
  stop(instance: InstanceRef): Promise<void>;
  /** Whether that generation is running (or being provisioned). */
  status(instance: InstanceRef): Promise<'running' | 'stopped'>;
  /**
   * Removes the workspace and everything the runtime made for the sandbox, after stopping it.
   * `done: false` means clean-up continues asynchronously: call again later with the returned state.
   */
  destroy(instance: InstanceRef): Promise<{ done: boolean; state: RuntimeState }>;
  /** Every sandbox process or task the runtime is running, owned or not (for the orphan sweep). */
  list(): Promise<RunningInstance[]>;
  /** Warm standbys (shared/sandboxes/pool.ts); absent where a runtime keeps none. */
  readonly standbys?: StandbyRuntime;
}

/** What starting a standby needs: no user, no sandbox, no workspace, only its pool credential. */
export interface StandbyRequest {
  standbyId: string;
  spec: SandboxSpec;
  /** The pool credential: it can check in, wait and be claimed, nothing else. */
  poolToken: string;
  bridgeUrl: string;
}

/** A start as the pool judges it: which starts a standby can serve. */
export interface ClaimCandidate {
  sandboxId: string;
  userId: string;
  spec: SandboxSpec;
  options?: LaunchOptions;
  /** The generation being started (1: a new sandbox; more: a resume). */
  generation: number;
}

/**
 * The runtime's side of the warm pool. A standby is the same program as a sandbox's, started before
 * any user asked, bound to a sandbox at the claim. What the runtime fixes at start (ECS: `startedBy`,
 * container overrides, capacity provider; locally: bubblewrap's mounts) decides which starts it serves.
 */
export interface StandbyRuntime {
  /** What the spec's standbys are started from now (task definition ARN, ...): a standby of another is drained. */
  revision(spec: SandboxSpec): string;
  /** The capacity the spec's standbys run on (`FARGATE_SPOT`, `FARGATE`, `process`). */
  capacity(spec: SandboxSpec): string;
  /** Why a standby cannot serve this start (a sentence for the start's phases), or undefined when it can. */
  coldReason(start: ClaimCandidate): string | undefined;
  /** Where the bound sandbox's directories are, when the standby sees them under new names (see PoolBinding). */
  bindingPaths(sandboxId: string): PoolBinding['paths'];
  startStandby(req: StandbyRequest): Promise<{ ref: string }>;
  /**
   * Makes the claimed standby `ref` the sandbox's instance of `generation` (locally: its directory
   * renamed to the sandbox's, the process filed under the sandbox; AWS: the task tagged with the
   * sandbox id). Returns the instance's handle and state as `start` would.
   */
  bindStandby(
    standbyId: string,
    ref: string,
    req: { sandboxId: string; userId: string; generation: number },
  ): Promise<{ ref: string; state: RuntimeState }>;
  /** Stops a standby that was not bound (drained, lost, surplus). Idempotent. */
  stopStandby(standbyId: string, ref: string | undefined): Promise<void>;
}
