import * as z from '#shared/zod.ts';
import type { AgentChoice, McpConfig } from '#shared/settings/model.ts';

/*
 * The protocol between the program inside a sandbox (sandbox/) and the control plane (shared/):
 * the paths it calls, the ids in them, the commands it is sent, the bodies it posts and the
 * statuses and metrics it reports. Both sides import this module and nothing else of each other, so
 * a change to the protocol is a change here. Only zod and types: the sandbox bundles it.
 */

// --- paths (API Gateway syntax; the route table declares them, the sandbox's client fills them) ---

export const protocolPaths = {
  checkIn: '/api/v1/sandboxes/{sandbox_id}/bridge/check-in',
  heartbeat: '/api/v1/sandboxes/{sandbox_id}/bridge/heartbeat',
  commands: '/api/v1/sandboxes/{sandbox_id}/bridge/commands',
  ack: '/api/v1/sandboxes/{sandbox_id}/bridge/commands/{seq}/ack',
  reply: '/api/v1/sandboxes/{sandbox_id}/bridge/commands/{seq}/reply',
  snapshotUpload: '/api/v1/sandboxes/{sandbox_id}/bridge/snapshots',
  snapshotComplete: '/api/v1/sandboxes/{sandbox_id}/bridge/snapshots/complete',
  snapshotDownload: '/api/v1/sandboxes/{sandbox_id}/bridge/snapshots/current',
  // The conversation's bridge routes keep OpenHands' paths (`/api/v1/webhooks/...`, where its agent server
  // posts): the wire contract. Our own names for them say "bridge" (shared/conversations/bridge-operations.ts).
  events: '/api/v1/webhooks/{sandbox_id}/events/{conversation_id}',
  report: '/api/v1/webhooks/{sandbox_id}/conversations',
  startConfig: '/api/v1/webhooks/{sandbox_id}/conversations/{conversation_id}/start-config',
  poolCheckIn: '/api/v1/pool/standbys/{standby_id}/check-in',
  poolWait: '/api/v1/pool/standbys/{standby_id}/wait',
} as const;
export type ProtocolPath = keyof typeof protocolPaths;

/** A path with its `{name}` parameters filled in (each URI-encoded). */
export function fillPath(path: ProtocolPath, params: Record<string, string | number>): string {
  return protocolPaths[path].replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${path}: no value for {${name}}`);
    return encodeURIComponent(String(value));
  });
}

// --- ids: one rule each ----------------------------------------------------------------------------

/** Sandbox ids in paths and bodies: only looked up, never trusted, so anything unknown is a 404. */
export const sandboxIdSchema = z.lazy(() => z.string().check(z.minLength(1), z.maxLength(128)));

/** Conversation ids: UUIDs as 32 hex chars; input accepts the dashed form too. */
export const conversationIdSchema = z.lazy(() =>
  z.pipe(
    z
      .string()
      .check(
        z.regex(
          /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/,
          'must be a UUID (32 hex characters, dashes optional)',
        ),
      ),
    z.transform((v: string) => v.replaceAll('-', '').toLowerCase()),
  ),
);

/** The path parameters of the bridge's routes. */
export const sandboxParams = z.lazy(() => z.object({ sandbox_id: sandboxIdSchema }));

// --- statuses ------------------------------------------------------------------------------------

export const sandboxStatuses = ['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING'] as const;
export type SandboxStatus = (typeof sandboxStatuses)[number];

export const executionStatuses = [
  'idle',
  'running',
  'paused',
  'waiting_for_confirmation',
  'finished',
  'error',
  'stuck',
] as const;
export const executionStatusSchema = z.lazy(() => z.enum(executionStatuses));
export type ExecutionStatus = z.output<typeof executionStatusSchema>;

/** A conversation's start, in order; the sandbox reports the steps from PREPARING_REPOSITORY on. */
export const startTaskStatuses = [
  'WORKING',
  'WAITING_FOR_SANDBOX',
  'PREPARING_REPOSITORY',
  'RUNNING_SETUP_SCRIPT',
  'SETTING_UP_GIT_HOOKS',
  'STARTING_CONVERSATION',
  'READY',
  'ERROR',
] as const;
export const startTaskStatusSchema = z.lazy(() => z.enum(startTaskStatuses));
export type StartTaskStatus = z.output<typeof startTaskStatusSchema>;

// --- metrics -------------------------------------------------------------------------------------

// Bounded and rounded: DynamoDB stores no number beyond ~1e126 or closer to 0 than 1e-130. Rounded by an
// overwrite check (not a transform), so its output is still a number in the OpenAPI document and the client's types.
const dollars = z.lazy(() =>
  z.number().check(
    z.gte(0),
    z.lte(1_000_000_000),
    z.overwrite((v: number) => Math.round(v * 1e9) / 1e9),
  ),
);
const tokens = z.lazy(() => z.number().check(z.int(), z.gte(0), z.lte(1e15)));

/** A conversation's token usage and cost, as the sandbox reports it and the control plane stores it. */
export const metricsSchema = z.lazy(() =>
  z.object({
    accumulated_cost: dollars,
    prompt_tokens: tokens,
    completion_tokens: tokens,
    max_budget_per_task: z.nullable(dollars),
  }),
);
export type Metrics = z.output<typeof metricsSchema>;

/** What the agent keeps (and shows in its `metrics` events): the reported members and how they came about. */
export const agentMetricsSchema = z.lazy(() =>
  z.extend(z.unlazy(metricsSchema), {
    model: z.string(),
    llm_calls: z.number().check(z.int()),
    /** Where the per-token prices came from; `unknown` means the cost is counted as 0. */
    price_source: z.enum(['table', 'config', 'unknown']),
    note: z.nullable(z.string()),
  }),
);
export type AgentMetrics = z.output<typeof agentMetricsSchema>;

// --- the bridge: check-in, heartbeat, commands ----------------------------------------------------

export const checkInBodySchema = z.lazy(() =>
  z.object({
    version: z._default(z.string().check(z.maxLength(64)), 'unknown'),
    capabilities: z._default(z.array(z.string().check(z.maxLength(64))).check(z.maxLength(50)), []),
  }),
);
export type CheckInBody = z.input<typeof checkInBodySchema>;
export const checkInResponseSchema = z.lazy(() =>
  z.object({
    sandbox_id: z.string(),
    session_api_key: z.string(),
    heartbeat_seconds: z.number(),
    poll_wait_seconds: z.number(),
  }),
);
export type CheckInResponse = z.output<typeof checkInResponseSchema>;

export const heartbeatBodySchema = z.lazy(() =>
  z.object({
    active: z
      ._default(z.boolean(), false)
      .check(z.meta({ description: 'true when the agent did work since the last heartbeat' })),
    restore_ms: z.optional(
      z
        .number()
        .check(
          z.int(),
          z.gte(0),
          z.lte(3_600_000),
          z.meta({ description: "How long restoring the workspace's snapshot took (the start's restore phase), once" }),
        ),
    ),
  }),
);
export const heartbeatResponseSchema = z.lazy(() =>
  z.object({
    status: z.enum(sandboxStatuses),
    command_seq: z
      .number()
      .check(z.int(), z.meta({ description: 'The number of the last command queued for the sandbox (0: none yet)' })),
  }),
);

/** The command types the conversation runner handles (announced at check-in, before the runner is loaded). */
export const conversationCommands = [
  'start_conversation',
  'send_message',
  'pause_conversation',
  'run_conversation',
  'respond_to_confirmation',
] as const;
/** The command the control plane sends a sandbox that is no longer RUNNING. */
export const STOP_COMMAND = 'stop';

export const commandSchema = z.lazy(() =>
  z.object({
    seq: z.number().check(z.int(), z.meta({ description: 'Position in the queue; 0 for the synthetic stop command' })),
    type: z.string(),
    payload: z.unknown(),
    created_at: z.string(),
  }),
);
export type SandboxCommand = z.output<typeof commandSchema>;
export const commandsResponseSchema = z.lazy(() => z.object({ commands: z.array(commandSchema) }));

/** What another service may queue for a sandbox (e.g. `start_conversation`, `send_message`). */
export const commandInputSchema = z.lazy(() =>
  z.object({
    type: z.string().check(z.regex(/^[a-z][a-z0-9_]{0,63}$/, 'command type: lower-case snake case')),
    payload: z.optional(z.unknown()),
  }),
);
export type CommandInput = z.output<typeof commandInputSchema>;

// --- workspace reads: a request/reply command (shared/sandboxes/workspace-reads.ts, sandbox/workspace-reads.ts) ---

/**
 * The command a workspace read is: the control plane queues it (pushed on AWS, long-polled locally),
 * the program answers by posting a reply to the `reply` path of the same `seq` with the same
 * `request_id`, and the route that queued it waits for that reply (at most WORKSPACE_READ_WAIT_MS).
 */
export const WORKSPACE_READ_COMMAND = 'workspace_read';
/** How long a route waits for a reply (under API Gateway's 30 s); a program skips a read queued earlier than this. */
export const WORKSPACE_READ_WAIT_MS = 10_000;
/** Largest reply body the bridge takes (a DynamoDB item holds it until the waiting route reads it: 400 KB). */
export const WORKSPACE_REPLY_MAX_BYTES = 384 * 1024;
/** Largest file served by `/file` (bytes); a larger one is a 413 naming its size. */
export const WORKSPACE_FILE_MAX_BYTES = 256 * 1024;
/** Largest side of a diff (`original`, `modified`) in bytes; a larger one is a 413. */
export const WORKSPACE_DIFF_MAX_BYTES = 128 * 1024;
/** Most entries of a listing or of git changes (Agent Canvas shows at most 2000 files). */
export const WORKSPACE_LIST_MAX = 2000;
/** Longest workspace path accepted (bytes, as Linux's PATH_MAX). */
export const WORKSPACE_PATH_MAX_BYTES = 4096;

/** Directories a listing does not descend into (as Agent Canvas's own listing: build output, caches, `.git`). */
export const WORKSPACE_LIST_PRUNED: readonly string[] = [
  '.git',
  'node_modules',
  '.venv',
  'venv',
  '__pycache__',
  'dist',
  'build',
  '.next',
  '.cache',
  '.pytest_cache',
  '.mypy_cache',
  '.turbo',
  '.parcel-cache',
  'target',
  '.sandbox-state',
];

export const workspaceReadOps = ['list', 'file', 'git_changes', 'git_diff'] as const;
export type WorkspaceReadOp = (typeof workspaceReadOps)[number];

/** The command's payload: `path` is relative to the workspace root (`/workspace/project`), already confined. */
export interface WorkspaceReadPayload {
  request_id: string;
  conversation_id: string;
  op: WorkspaceReadOp;
  path: string;
  /** After this the program skips the read (the route has answered 504 and removed it from the queue). */
  expires_at: string;
}

const relPath = z.lazy(() => z.string().check(z.maxLength(WORKSPACE_PATH_MAX_BYTES)));
const gitStatus = z.lazy(() => z.enum(['ADDED', 'DELETED', 'UPDATED', 'MOVED']));

/**
 * What the program posts. `error`: `not_found` (no such file or directory in the workspace, or one a
 * symlink leads out of), `too_large` (`size` says how large), `not_a_file`, `failed` (`message`).
 */
export const workspaceReplySchema = z.lazy(() =>
  z.object({
    request_id: z.string().check(z.regex(/^[0-9a-f]{32}$/, 'request_id: 32 hex characters')),
    conversation_id: conversationIdSchema,
    result: z.union([
      z.object({
        op: z.literal('list'),
        files: z.array(relPath).check(z.maxLength(WORKSPACE_LIST_MAX)),
        truncated: z.boolean(),
      }),
      z.object({
        op: z.literal('file'),
        /** The file's bytes, base64. */
        content_base64: z.string().check(z.maxLength(Math.ceil(WORKSPACE_FILE_MAX_BYTES / 3) * 4)),
      }),
      z.object({
        op: z.literal('git_changes'),
        changes: z.array(z.object({ status: gitStatus, path: relPath })).check(z.maxLength(WORKSPACE_LIST_MAX)),
      }),
      z.object({
        op: z.literal('git_diff'),
        original: z.nullable(z.string().check(z.maxLength(WORKSPACE_DIFF_MAX_BYTES))),
        modified: z.nullable(z.string().check(z.maxLength(WORKSPACE_DIFF_MAX_BYTES))),
      }),
      z.object({
        error: z.enum(['not_found', 'too_large', 'not_a_file', 'failed']),
        size: z.optional(z.number().check(z.int(), z.gte(0))),
        message: z.optional(z.string().check(z.maxLength(500))),
      }),
    ]),
  }),
);
export type WorkspaceReply = z.output<typeof workspaceReplySchema>;
export type WorkspaceReplyBody = z.input<typeof workspaceReplySchema>;

// --- workspace snapshots (AWS only: locally a workspace is a directory that stays) ----------------

export const snapshotUploadSchema = z.lazy(() =>
  z.object({
    key: z.string().check(z.meta({ description: "The new object key, under this sandbox's own prefix" })),
    url: z.string(),
    fields: z
      .record(z.string(), z.string())
      .check(z.meta({ description: 'Form fields to send before the file (a presigned POST)' })),
    max_bytes: z.number().check(z.int(), z.meta({ description: 'The content-length-range the upload is signed with' })),
    expires_at: z.string(),
  }),
);
export type SnapshotUpload = z.output<typeof snapshotUploadSchema>;

export const snapshotCompleteBodySchema = z.lazy(() =>
  z.object({
    key: z
      .string()
      .check(z.minLength(1), z.maxLength(512), z.meta({ description: 'The key of the upload that completed' })),
  }),
);
export const snapshotCompleteResponseSchema = z.lazy(() =>
  z.object({ key: z.string(), bytes: z.number().check(z.int()) }),
);

export const snapshotDownloadSchema = z.lazy(() =>
  z.object({
    url: z
      .nullable(z.string())
      .check(z.meta({ description: 'A presigned GET of the current snapshot; null when the sandbox has none yet' })),
    expires_at: z.nullable(z.string()),
  }),
);
export type SnapshotDownload = z.output<typeof snapshotDownloadSchema>;

// --- conversations: start config, status reports, events -------------------------------------------

/** Everything the sandbox needs to prepare and run one conversation (sent to that sandbox only). */
export interface StartConfig {
  conversation_id: string;
  start_task_id: string;
  /** `api: 'anthropic'`: base_url speaks Anthropic's Messages API (a platform model behind the LLM gateway); else OpenAI-compatible. */
  llm: { model: string; api_key: string; base_url: string | null; api?: 'anthropic' };
  max_iterations: number | null;
  max_budget_per_task: number | null;
  confirmation_mode: boolean;
  git_identity: { name: string | null; email: string | null };
  repository: null | {
    full_name: string;
    provider: string;
    clone_url: string;
    branch: string | null;
    /** An `http.extraHeader` value for git, so the token never lands in the clone's config. */
    auth_header: string | null;
  };
  /** Custom secrets: environment for commands, masked in events. */
  secrets: Record<string, string>;
  mcp_config: McpConfig;
  instructions: string | null;
  initial_message: { content: unknown[]; run: boolean } | null;
  replay_json: string | null;
  agent_type: 'default' | 'plan';
  /** The agent to run: `agent_type: "plan"` picks the planner, otherwise the `agent` setting (default CodeActAgent). */
  agent: AgentChoice;
  /** `llm`: the model rates each action's risk and confirmation mode asks only for risky ones. */
  security_analyzer: 'llm' | null;
  condenser: { enabled: boolean; max_size: number | null };
  /** With `search_api_key`: web search and fetch tools (the key is masked in events like the LLM key). */
  search: { api_key: string } | null;
  /** The language the agent writes to the user in. */
  language: string | null;
}

/** What the sandbox reports about a conversation (POST the `report` path). */
export const conversationReportSchema = z.lazy(() =>
  z.object({
    conversation_id: conversationIdSchema,
    start_task_status: z.optional(startTaskStatusSchema),
    detail: z.optional(z.nullable(z.string().check(z.maxLength(4096)))),
    execution_status: z.optional(executionStatusSchema),
    metrics: z.optional(z.partial(z.unlazy(metricsSchema))),
    title: z.optional(z.string().check(z.maxLength(512))),
  }),
);
export type ConversationReport = z.output<typeof conversationReportSchema>;

/** Largest event stored (DynamoDB items stop at 400 KB; the agent truncates long outputs anyway). */
export const MAX_EVENT_BYTES = 256 * 1024;
/** Most events in one post of the `events` path. */
export const MAX_EVENT_BATCH = 100;

/**
 * The envelope every event has (OpenHands' event base). The kind-specific members pass through as
 * the agent sent them: the control plane stores and serves events, it does not interpret them.
 */
export const eventSchema = z.lazy(() =>
  z
    .looseObject({
      kind: z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9]{0,63}$/, 'kind must be an event class name')),
      id: z.string().check(z.regex(/^[A-Za-z0-9-]{1,64}$/, 'id must be 1-64 of A-Z a-z 0-9 -')),
      timestamp: z.iso.datetime({ offset: true, local: true, message: 'timestamp must be an ISO-8601 date-time' }),
      source: z.enum(['agent', 'user', 'environment']),
    })
    .check(
      z.refine(
        (e) => Buffer.byteLength(JSON.stringify(e)) <= MAX_EVENT_BYTES,
        `an event must be at most ${MAX_EVENT_BYTES} bytes`,
      ),
    ),
);
export type AgentEventEnvelope = z.output<typeof eventSchema>;

/** The events post's query: the sequence number of the batch's first event (the others follow it, one each). */
export const eventPostQuery = z.lazy(() =>
  z.object({
    first_seq: z.coerce
      .number({ error: 'first_seq must be a positive integer' })
      .check(
        z.int('first_seq must be a positive integer'),
        z.gte(1, 'first_seq must be a positive integer'),
        z.lte(Number.MAX_SAFE_INTEGER, 'first_seq must be a positive integer'),
      ),
  }),
);

// --- the warm pool: a standby's own endpoints (shared/sandboxes/pool.ts) ------------------------

/** Standby ids in pool paths: `sb_` and 32 hex; anything else is refused before any lookup. */
export const standbyParams = z.lazy(() =>
  z.object({ standby_id: z.string().check(z.regex(/^sb_[0-9a-f]{32}$/, 'standby_id: sb_ and 32 hex characters')) }),
);

export const poolCheckInBodySchema = z.lazy(() =>
  z.object({
    version: z._default(z.string().check(z.maxLength(64)), 'unknown'),
    public_key: z.string().check(
      z.maxLength(1024),
      z.startsWith('-----BEGIN PUBLIC KEY-----'),
      z.meta({
        description: "The standby's RSA public key (SPKI PEM): its binding's enrollment token is sealed to it",
      }),
    ),
  }),
);
export const poolCheckInResponseSchema = z.lazy(() => z.object({ standby_id: z.string(), wait_seconds: z.number() }));

/**
 * What a claim pushes to its standby: the sandbox it now is and the generation, and the one-time
 * enrollment token (RSA-OAEP sealed to the standby's key), which it exchanges at the sandbox's
 * check-in as a cold start exchanges the one in its environment. `paths`: where the sandbox's
 * directories are now, when the standby sees them under new names (a local standby without
 * bubblewrap, whose directory was renamed at the claim).
 */
export const poolBindingSchema = z.lazy(() =>
  z.object({
    sandbox_id: z.string(),
    generation: z.number().check(z.int()),
    enrollment_sealed: z.string(),
    paths: z.nullable(z.object({ workspace: z.string(), home: z.string(), tmp: z.string() })),
  }),
);
export type PoolBinding = z.output<typeof poolBindingSchema>;

export const poolWaitResponseSchema = z.lazy(() =>
  z.object({
    binding: z.nullable(poolBindingSchema),
    stop: z.boolean().check(z.meta({ description: 'true: the standby is drained, the program exits' })),
  }),
);
export type PoolWaitResponse = z.output<typeof poolWaitResponseSchema>;
