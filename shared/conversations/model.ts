import * as z from 'zod';
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
  type StartTaskStatus,
} from '#shared/protocol.ts';
import { gitProviderSchema, mcpConfigSchema } from '#shared/settings/model.ts';

/** Where a status stands in the start flow; a report may only move a task forward. */
export const startTaskRank = (s: StartTaskStatus) => (s === 'ERROR' ? 100 : startTaskStatuses.indexOf(s));

/** The path parameters of one conversation's routes. */
export const conversationParams = z.lazy(() => z.object({ conversation_id: conversationIdSchema }));

const repository = z.lazy(() => z.string().regex(/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+){1,4}$/, 'must look like owner/name'));
const branch = z.lazy(() => z.string().min(1).max(255).regex(/^[^\s~^:?*[\\]+$/, 'must be a git branch name'));

const textContent = z.lazy(() => z.object({ type: z.literal('text'), text: z.string().min(1).max(100_000) }));
const imageContent = z.lazy(() => z.object({ type: z.literal('image'), image_urls: z.array(z.string().max(8192).refine((u) => /^(https?:|data:image\/)/.test(u), 'must be an http(s) or data:image URL')).min(1).max(20) }));

export const initialMessageSchema = z.lazy(() =>
  z.object({
    role: z.literal('user').default('user'),
    content: z.array(z.discriminatedUnion('type', [textContent, imageContent])).min(1).max(50),
    run: z.boolean().default(true),
  }),
);
export type InitialMessage = z.output<typeof initialMessageSchema>;

/** POST /api/v1/app-conversations (OpenHands' AppConversationStartRequest; every member optional). */
export const startRequestSchema = z.lazy(() =>
  z.strictObject({
    sandbox_id: sandboxIdSchema.nullable().optional(),
    initial_message: initialMessageSchema.nullable().optional(),
    llm_model: z.string().max(256).nullable().optional(),
    selected_repository: repository.nullable().optional(),
    selected_branch: branch.nullable().optional(),
    git_provider: gitProviderSchema.nullable().optional(),
    title: z.string().max(512).nullable().optional(),
    trigger: z.string().max(64).nullable().optional(),
    pr_number: z.array(z.number().int().positive().max(1_000_000_000)).max(100).default([]),
    parent_conversation_id: conversationIdSchema.nullable().optional(),
    agent_type: z.enum(['default', 'plan']).default('default'),
    // The legacy inputs, also accepted here so V1 can create every kind of conversation the spec lists.
    conversation_instructions: z.string().max(100_000).nullable().optional(),
    replay_json: z.string().max(5_000_000).nullable().optional(),
    create_microagent: z.object({ repo: repository, git_provider: gitProviderSchema.nullable().optional(), title: z.string().max(512).nullable().optional() }).nullable().optional(),
    suggested_task: z
      .object({
        repo: repository,
        issue_number: z.number().int().positive().max(1_000_000_000),
        title: z.string().max(512),
        git_provider: gitProviderSchema.nullable().optional(),
        task_type: z.enum(['MERGE_CONFLICTS', 'FAILING_CHECKS', 'UNRESOLVED_COMMENTS', 'OPEN_ISSUE', 'OPEN_PR']).nullable().optional(),
      })
      .nullable()
      .optional(),
    mcp_config: mcpConfigSchema.nullable().optional(),
    conversation_id: conversationIdSchema.nullable().optional(),
  }),
);
export type StartRequest = z.output<typeof startRequestSchema>;

/** POST /api/conversations (legacy): exactly the seed's fields; unknown fields are a 422. */
export const legacyCreateSchema = z.lazy(() =>
  z.strictObject({
    repository: repository.nullable().optional(),
    git_provider: gitProviderSchema.nullable().optional(),
    selected_branch: branch.nullable().optional(),
    initial_user_msg: z.string().max(100_000).nullable().optional(),
    image_urls: z.array(z.string().max(8192)).max(20).nullable().optional(),
    replay_json: z.string().max(5_000_000).nullable().optional(),
    suggested_task: startRequestSchema.unwrap().shape.suggested_task.unwrap().unwrap().optional(),
    create_microagent: startRequestSchema.unwrap().shape.create_microagent.unwrap().unwrap().optional(),
    conversation_instructions: z.string().max(100_000).nullable().optional(),
    mcp_config: mcpConfigSchema.optional(),
    conversation_id: conversationIdSchema.optional(),
  }),
);
export type LegacyCreate = z.output<typeof legacyCreateSchema>;

export const legacyCreateResponseSchema = z.lazy(() =>
  z.object({
    status: z.string(),
    conversation_id: z.string(),
    message: z.string().nullable(),
    conversation_status: z.enum(['STARTING', 'RUNNING', 'STOPPED']).nullable(),
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

export const conversationSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    created_by_user_id: z.string(),
    sandbox_id: z.string().nullable(),
    selected_repository: z.string().nullable(),
    selected_branch: z.string().nullable(),
    git_provider: z.string().nullable(),
    title: z.string().nullable(),
    trigger: z.string().nullable(),
    pr_number: z.array(z.number()),
    llm_model: z.string().nullable(),
    metrics: metricsSchema.nullable(),
    parent_conversation_id: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    sandbox_status: z.string().nullable(),
    execution_status: executionStatusSchema.nullable(),
    conversation_url: z.string().nullable(),
    session_api_key: z.string().nullable(),
  }),
);
export type AppConversation = z.output<typeof conversationSchema>;

export const startTaskSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    created_by_user_id: z.string(),
    status: startTaskStatusSchema,
    detail: z.string().nullable(),
    app_conversation_id: z.string().nullable(),
    sandbox_id: z.string().nullable(),
    agent_server_url: z.string().nullable(),
    request: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    updated_at: z.string(),
  }),
);
export type AppConversationStartTask = z.output<typeof startTaskSchema>;

const dateFilter = dateTimeFilter;
export const conversationSearchQuery = z.lazy(() =>
  z.object({
    title__contains: z.string().max(512).optional(),
    created_at__gte: dateFilter,
    created_at__lt: dateFilter,
    updated_at__gte: dateFilter,
    updated_at__lt: dateFilter,
    page_id: pageId,
    limit: pageLimit,
  }),
);
export type ConversationSearch = z.output<typeof conversationSearchQuery>;
export const conversationCountQuery = z.lazy(() => conversationSearchQuery.unwrap().omit({ page_id: true, limit: true }));

export const conversationListQuery = z.lazy(() => conversationSearchQuery.unwrap().extend({ ids: repeated('ids') }));

export const startTaskSearchQuery = z.lazy(() =>
  z.object({
    conversation_id__eq: conversationIdSchema.optional(),
    created_at__gte: dateFilter,
    sort_order: z.enum(['CREATED_AT', 'CREATED_AT_DESC']).default('CREATED_AT_DESC'),
    page_id: pageId,
    limit: pageLimit,
  }),
);

/** GET /api/conversations (legacy list the OpenHands UI reads): newest first, optional filters. */
export const legacyListQuery = z.lazy(() =>
  z.object({
    selected_repository: repository.optional(),
    conversation_trigger: z.string().min(1).max(64).optional(),
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
    title: z.string().nullable(),
    selected_repository: z.string().nullable(),
    selected_branch: z.string().nullable(),
    git_provider: z.string().nullable(),
    last_updated_at: z.string(),
    created_at: z.string(),
    status: z.enum(legacyStatuses),
    runtime_status: z.string().nullable(),
    trigger: z.string().nullable(),
    url: z.string().nullable(),
    session_api_key: z.string().nullable(),
    pr_number: z.array(z.number()),
    conversation_version: z.literal('V1'),
    sub_conversation_ids: z.array(z.string()),
  }),
);
export type LegacyConversation = z.output<typeof legacyConversationSchema>;

export const legacyConversationPageSchema = z.lazy(() => z.object({ results: z.array(legacyConversationSchema), next_page_id: z.string().nullable() }));

/** PATCH /api/conversations/{id}: only the title can change. */
export const legacyUpdateSchema = z.lazy(() => z.strictObject({ title: z.string().trim().min(1, 'title must not be empty').max(512) }));
