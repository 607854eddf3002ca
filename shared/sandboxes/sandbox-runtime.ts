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
}

/** A start that did not happen. `detail` is for the user; `state` is whatever was created before the failure. */
export class SandboxStartError extends Error {
  constructor(
    readonly detail: string,
    readonly state: RuntimeState = {},
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
 * (ECS tasks with an EFS workspace). One contract suite (test/contract/) runs against both.
 */
export interface SandboxRuntime {
  /**
   * Launches generation `req.generation` with its workspace (created on first start, kept after).
   * Returns when the process or task exists, not when the program is ready (it checks in).
   * Throws `SandboxStartError` with a readable detail on any failure.
   */
  start(req: StartRequest): Promise<{ ref: string; state: RuntimeState }>;
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
}
