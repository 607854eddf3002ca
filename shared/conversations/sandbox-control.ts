import type { Tenant } from '#shared/plans/limits.ts';

/**
 * What conversations need from sandboxes (a port, so the conversation service does not depend on
 * how sandboxes are run). The adapter wraps the sandbox service.
 */
export type SandboxStatus = 'STARTING' | 'RUNNING' | 'PAUSED' | 'ERROR' | 'MISSING';

export interface SandboxSummary {
  id: string;
  status: SandboxStatus;
  detail?: string | null;
}

/** Commands the control plane sends a sandbox about its conversations (delivered over the bridge, in order). */
export type ConversationCommand =
  | { type: 'start_conversation'; conversation_id: string; start_task_id: string }
  | { type: 'send_message'; conversation_id: string; message: { role: 'user'; content: unknown[]; run: boolean } }
  | { type: 'pause_conversation'; conversation_id: string }
  | { type: 'run_conversation'; conversation_id: string }
  | { type: 'respond_to_confirmation'; conversation_id: string; accept: boolean; reason: string | null };

/** The sandbox a webhook comes from, as the request's key check read its record (so it is not read twice). */
export interface SandboxCaller {
  id: string;
  userId: string;
  status: SandboxStatus;
  lastActivityAt?: string;
  /** The organization that pays and its plan when this generation started (the ingest's limits; absent on old records). */
  orgId?: string;
  plan?: string;
  generation?: number;
}

export interface SandboxControl {
  /** Starts a new sandbox for the user (the plan's limits and the per-user running limit apply). */
  start(userId: string, baseUrl: string, tenant: Tenant): Promise<SandboxSummary>;
  /** The user's sandbox; undefined when unknown or another user's. */
  find(userId: string, sandboxId: string): Promise<SandboxSummary | undefined>;
  /** Statuses of sandboxes by id (missing ids are absent). */
  statuses(ids: string[]): Promise<Map<string, SandboxSummary>>;
  /** Resumes a paused sandbox of the user (no-op when running or starting). */
  resume(userId: string, sandboxId: string, baseUrl: string, tenant: Tenant): Promise<void>;
  /** Queues a command for the sandbox's program; delivered when it next polls (also after a resume). */
  send(userId: string, sandboxId: string, command: ConversationCommand): Promise<void>;
  /** Records agent activity (keeps the sandbox from being paused as idle). */
  touch(sandboxId: string): Promise<void>;
}
