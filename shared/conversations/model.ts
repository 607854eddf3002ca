import * as z from '#shared/zod.ts';
import { dateTimeFilter, pageId, pageLimit, repeated } from '#shared/http/query.ts';
import {
  conversationIdSchema,
  executionStatusSchema,
  metricsSchema,
  sandboxIdSchema,
  startTaskStatuses,
  startTaskStatusSchema,
  type ExecutionStatus,
  type Metrics,
  type SandboxStatus,
  type StartTaskStatus,
} from '#shared/protocol.ts';
import { gitProviderSchema, mcpConfigSchema } from '#shared/settings/model.ts';

/** Where a status stands in the start flow; a report may only move a task forward. */
export const startTaskRank = (s: StartTaskStatus) => (s === 'ERROR' ? 100 : startTaskStatuses.indexOf(s));

/** The path parameters of one conversation's routes. */
export const conversationParams = z.lazy(() => z.object({ conversation_id: conversationIdSchema }));

const repository = z.lazy(() =>
  z.string().check(z.regex(/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+){1,4}$/, 'must look like owner/name')),
);
const branch = z.lazy(() =>
  z.string().check(z.minLength(1), z.maxLength(255), z.regex(/^[^\s~^:?*[\\]+$/, 'must be a git branch name')),
);

const textContent = z.lazy(() =>
  z.object({ type: z.literal('text'), text: z.string().check(z.minLength(1), z.maxLength(100_000)) }),
);
const imageContent = z.lazy(() =>
  z.object({
    type: z.literal('image'),
    image_urls: z
      .array(
        z.string().check(
          z.maxLength(8192),
          z.refine((u) => /^(https?:|data:image\/)/.test(u), 'must be an http(s) or data:image URL'),
        ),
      )
      .check(z.minLength(1), z.maxLength(20)),
  }),
);

export const initialMessageSchema = z.lazy(() =>
  z.object({
    role: z._default(z.literal('user'), 'user'),
    content: z.array(z.discriminatedUnion('type', [textContent, imageContent])).check(z.minLength(1), z.maxLength(50)),
    run: z._default(z.boolean(), true),
  }),
);
export type InitialMessage = z.output<typeof initialMessageSchema>;

const createMicroagent = z.lazy(() =>
  z.object({
    repo: repository,
    git_provider: z.nullish(gitProviderSchema),
    title: z.nullish(z.string().check(z.maxLength(512))),
  }),
);
const suggestedTask = z.lazy(() =>
  z.object({
    repo: repository,
    issue_number: z.number().check(z.int(), z.positive(), z.lte(1_000_000_000)),
    title: z.string().check(z.maxLength(512)),
    git_provider: z.nullish(gitProviderSchema),
    task_type: z.nullish(z.enum(['MERGE_CONFLICTS', 'FAILING_CHECKS', 'UNRESOLVED_COMMENTS', 'OPEN_ISSUE', 'OPEN_PR'])),
  }),
);

/** POST /api/v1/app-conversations (OpenHands' AppConversationStartRequest; every member optional). */
export const startRequestSchema = z.lazy(() =>
  z.strictObject({
    sandbox_id: z.nullish(sandboxIdSchema),
    initial_message: z.nullish(initialMessageSchema),
    llm_model: z.nullish(z.string().check(z.maxLength(256))),
    selected_repository: z.nullish(repository),
    selected_branch: z.nullish(branch),
    git_provider: z.nullish(gitProviderSchema),
    title: z.nullish(z.string().check(z.maxLength(512))),
    trigger: z.nullish(z.string().check(z.maxLength(64))),
    pr_number: z._default(
      z.array(z.number().check(z.int(), z.positive(), z.lte(1_000_000_000))).check(z.maxLength(100)),
      [],
    ),
    parent_conversation_id: z.nullish(conversationIdSchema),
    agent_type: z._default(z.enum(['default', 'plan']), 'default'),
    // The legacy inputs, also accepted here so V1 can create every kind of conversation the spec lists.
    conversation_instructions: z.nullish(z.string().check(z.maxLength(100_000))),
    replay_json: z.nullish(z.string().check(z.maxLength(5_000_000))),
    create_microagent: z.nullish(createMicroagent),
    suggested_task: z.nullish(suggestedTask),
    mcp_config: z.nullish(mcpConfigSchema),
    conversation_id: z.nullish(conversationIdSchema),
    // Agent Canvas sends both on every start (null unless chosen). This API has neither plugins nor agent
    // profiles (GET /api/agent-profiles lists none), so only none is accepted: a value is refused, never dropped.
    plugins: z.nullish(z.array(z.unknown()).check(z.maxLength(0, 'plugins are not supported here'))),
    agent_profile_id: z.nullish(
      z.string().check(z.refine(() => false, 'no agent profiles here (GET /api/agent-profiles lists none)')),
    ),
  }),
);
export type StartRequest = z.output<typeof startRequestSchema>;

/** POST /api/conversations (legacy): exactly the seed's fields; unknown fields are a 422. */
export const legacyCreateSchema = z.lazy(() =>
  z.strictObject({
    repository: z.nullish(repository),
    git_provider: z.nullish(gitProviderSchema),
    selected_branch: z.nullish(branch),
    initial_user_msg: z.nullish(z.string().check(z.maxLength(100_000))),
    image_urls: z.nullish(z.array(z.string().check(z.maxLength(8192))).check(z.maxLength(20))),
    replay_json: z.nullish(z.string().check(z.maxLength(5_000_000))),
    suggested_task: z.optional(suggestedTask),
    create_microagent: z.optional(createMicroagent),
    conversation_instructions: z.nullish(z.string().check(z.maxLength(100_000))),
    mcp_config: z.optional(mcpConfigSchema),
    conversation_id: z.optional(conversationIdSchema),
  }),
);
export type LegacyCreate = z.output<typeof legacyCreateSchema>;

export const legacyCreateResponseSchema = z.lazy(() =>
  z.object({
    status: z.string(),
    conversation_id: z.string(),
    message: z.nullable(z.string()),
    conversation_status: z.nullable(z.enum(['STARTING', 'RUNNING', 'STOPPED'])),
  }),
);

export interface ConversationRecord {
  id: string;
  userId: string;
  createdAt: string;
  updatedAt: string;
  sandbox_id: string | null;
  start_task_id: string;
  selected_repository: string | null;
  selected_branch: string | null;
  git_provider: string | null;
  title: string | null;
  trigger: string | null;
  pr_number: number[];
  llm_model: string | null;
  parent_conversation_id: string | null;
  agent_type: 'default' | 'plan';
  execution_status: ExecutionStatus | null;
  metrics: Metrics | null;
  /** Bumped by every status report; the condition of the next one. */
  version: number;
  /** The version of the conversation-scoped key (absent: 1); bumping it revokes the keys handed out. */
  keyVersion?: number;
}

export interface StartTaskRecord {
  id: string;
  userId: string;
  status: StartTaskStatus;
  detail: string | null;
  app_conversation_id: string;
  sandbox_id: string | null;
  /** The request with its MCP secrets masked (see mcp-secrets.ts). */
  request: StartRequest;
  /** The request's MCP secrets, sealed for the user; absent when it had none. */
  mcpSecretsSealed?: string;
  createdAt: string;
  updatedAt: string;
  /** Set while the task is not READY/ERROR, so the sweeper can find stalled ones (sparse index). */
  pendingShard?: string;
}

/** A conversation's sandbox as its views show it (from `SandboxQueue.statuses`: nothing sealed is opened). */
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

/**
 * A conversation command as the sandbox's queue stores it: its type, and the rest as the payload. Stored
 * as it is: conversation commands carry ids and user messages, never secrets (the sandbox fetches those
 * from the start-config bridge route), so no KMS size limit applies.
 */
export const queued = ({ type, ...payload }: ConversationCommand) => ({ type, payload });

/** The sandbox a bridge route comes from, as the request's key check read its record (so it is not read twice). */
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

export const conversationSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    created_by_user_id: z.string(),
    sandbox_id: z.nullable(z.string()),
    selected_repository: z.nullable(z.string()),
    selected_branch: z.nullable(z.string()),
    git_provider: z.nullable(z.string()),
    title: z.nullable(z.string()),
    trigger: z.nullable(z.string()),
    pr_number: z.array(z.number()),
    llm_model: z.nullable(z.string()),
    metrics: z.nullable(metricsSchema),
    parent_conversation_id: z.nullable(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    sandbox_status: z.nullable(z.string()),
    execution_status: z.nullable(executionStatusSchema),
    conversation_url: z.nullable(z.string()),
    session_api_key: z.nullable(z.string()),
  }),
);
export type AppConversation = z.output<typeof conversationSchema>;

export const startTaskSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    created_by_user_id: z.string(),
    status: startTaskStatusSchema,
    detail: z.nullable(z.string()),
    app_conversation_id: z.nullable(z.string()),
    sandbox_id: z.nullable(z.string()),
    agent_server_url: z.nullable(z.string()),
    request: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    updated_at: z.string(),
  }),
);
export type AppConversationStartTask = z.output<typeof startTaskSchema>;

const dateFilter = dateTimeFilter;
export const conversationSearchQuery = z.lazy(() =>
  z.object({
    title__contains: z.optional(z.string().check(z.maxLength(512))),
    created_at__gte: dateFilter,
    created_at__lt: dateFilter,
    updated_at__gte: dateFilter,
    updated_at__lt: dateFilter,
    page_id: pageId,
    limit: pageLimit,
  }),
);
export type ConversationSearch = z.output<typeof conversationSearchQuery>;
export const conversationCountQuery = z.lazy(() =>
  z.omit(z.unlazy(conversationSearchQuery), { page_id: true, limit: true }),
);

export const conversationListQuery = z.lazy(() =>
  z.extend(z.unlazy(conversationSearchQuery), { ids: repeated('ids') }),
);

export const startTaskSearchQuery = z.lazy(() =>
  z.object({
    conversation_id__eq: z.optional(conversationIdSchema),
    created_at__gte: dateFilter,
    sort_order: z._default(z.enum(['CREATED_AT', 'CREATED_AT_DESC']), 'CREATED_AT_DESC'),
    page_id: pageId,
    limit: pageLimit,
  }),
);

/** GET /api/conversations (legacy list the OpenHands UI reads): newest first, optional filters. */
export const legacyListQuery = z.lazy(() =>
  z.object({
    selected_repository: z.optional(repository),
    conversation_trigger: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
    page_id: pageId,
    limit: pageLimit,
  }),
);
export type LegacyListQuery = z.output<typeof legacyListQuery>;

export const legacyStatuses = ['STARTING', 'RUNNING', 'STOPPED', 'ARCHIVED', 'ERROR'] as const;

/** A conversation in the legacy shape (the fields the OpenHands UI's list and conversation page read). */
export const legacyConversationSchema = z.lazy(() =>
  z.object({
    conversation_id: z.string(),
    title: z.nullable(z.string()),
    selected_repository: z.nullable(z.string()),
    selected_branch: z.nullable(z.string()),
    git_provider: z.nullable(z.string()),
    last_updated_at: z.string(),
    created_at: z.string(),
    status: z.enum(legacyStatuses),
    runtime_status: z.nullable(z.string()),
    trigger: z.nullable(z.string()),
    url: z.nullable(z.string()),
    session_api_key: z.nullable(z.string()),
    pr_number: z.array(z.number()),
    conversation_version: z.literal('V1'),
    sub_conversation_ids: z.array(z.string()),
  }),
);
export type LegacyConversation = z.output<typeof legacyConversationSchema>;

export const legacyConversationPageSchema = z.lazy(() =>
  z.object({ results: z.array(legacyConversationSchema), next_page_id: z.nullable(z.string()) }),
);

/** PATCH /api/conversations/{id}: only the title can change. */
export const legacyUpdateSchema = z.lazy(() =>
  z.strictObject({ title: z.string().check(z.trim(), z.minLength(1, 'title must not be empty'), z.maxLength(512)) }),
);
