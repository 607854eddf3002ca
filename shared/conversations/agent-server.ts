import * as z from '#shared/zod.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';

/*
 * The OpenHands agent server's shapes, for the clients that talk to a conversation's
 * `conversation_url` as if it were an agent server (the official TypeScript client, Agent Canvas's
 * local mode). Facts from `OpenHands/software-agent-sdk` (openhands-agent-server `models.py`,
 * `server_details_router.py`); what we cannot fill is documented in docs/openhands-clients.md.
 */

/** The agent-server version `/server_info` reports: Agent Canvas 1.20 needs at least 1.28.0; the client's features check against it. */
export const AGENT_SERVER_COMPAT_VERSION = '1.39.0';

/** Where the agent's workspace appears to agent-server clients (the late-2025 web UI sends this path too). */
export const WORKSPACE_DIR = '/workspace/project';

/** The agent server's `ConversationInfo`, as far as this service knows a conversation (the members clients read). */
export const conversationInfoSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    title: z.nullable(z.string()),
    execution_status: z.string(),
    agent: z.object({ kind: z.string(), llm: z.object({ model: z.nullable(z.string()), usage_id: z.string() }) }),
    workspace: z.object({ kind: z.string(), working_dir: z.string() }),
    persistence_dir: z.null(),
    max_iterations: z.number(),
    stuck_detection: z.boolean(),
    confirmation_policy: z.object({ kind: z.string() }),
    security_analyzer: z.null(),
    activated_knowledge_skills: z.array(z.string()),
    metrics: z.nullable(z.record(z.string(), z.unknown())),
    stats: z.object({ usage_to_metrics: z.record(z.string(), z.unknown()) }),
    tags: z.record(z.string(), z.string()),
    parent_conversation_id: z.nullable(z.string()),
    sub_conversation_ids: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
  }),
);
export type ConversationInfo = z.output<typeof conversationInfoSchema>;

/**
 * A conversation record as the agent server's `ConversationInfo`. `execution_status` is the one the
 * sandbox last reported (`idle` before the first report); the confirmation policy is `AlwaysConfirm`
 * while the agent waits for a confirmation, else `NeverConfirm` (the record keeps no policy of its own).
 */
export function toConversationInfo(c: ConversationRecord): ConversationInfo {
  const metrics = c.metrics
    ? {
        accumulated_cost: c.metrics.accumulated_cost,
        max_budget_per_task: c.metrics.max_budget_per_task,
        accumulated_token_usage: {
          model: c.llm_model ?? '',
          prompt_tokens: c.metrics.prompt_tokens,
          completion_tokens: c.metrics.completion_tokens,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          reasoning_tokens: 0,
          context_window: 0,
          per_turn_token: 0,
        },
      }
    : null;
  return {
    id: c.id,
    title: c.title,
    execution_status: c.execution_status ?? 'idle',
    agent: { kind: 'Agent', llm: { model: c.llm_model, usage_id: 'agent' } },
    workspace: { kind: 'RemoteWorkspace', working_dir: WORKSPACE_DIR },
    persistence_dir: null,
    max_iterations: 500,
    stuck_detection: true,
    confirmation_policy: { kind: c.execution_status === 'waiting_for_confirmation' ? 'AlwaysConfirm' : 'NeverConfirm' },
    security_analyzer: null,
    activated_knowledge_skills: [],
    metrics,
    stats: { usage_to_metrics: metrics ? { agent: metrics } : {} },
    tags: {},
    parent_conversation_id: c.parent_conversation_id,
    sub_conversation_ids: [],
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}

/** Whether a request wants the agent server's shape: a conversation key, or a client that names itself (`X-OpenHands-Client`). */
export const wantsAgentServerShape = (via: string | undefined, headers: Record<string, string>): boolean =>
  via === 'conversation' || Boolean(headers['x-openhands-client']);

/**
 * `GET /api/settings` for a conversation key (Agent Canvas's local mode reads it before anything else):
 * that conversation's model and agent and the owner's confirmation mode, in the agent server's
 * members (`agent_settings`, `conversation_settings`) and the legacy names; nothing else of the
 * owner's settings: no secret, no `*_set` flag, no other field (Canvas's analytics consent: declined).
 */
export function conversationSettingsView(
  c: ConversationRecord,
  owner: { agent?: string | null; confirmation_mode?: boolean | null } | null,
) {
  // As the start configuration chose it (shared/conversations/start-config.ts).
  const agent =
    c.agent_type === 'plan' ? 'PlanningAgent' : owner?.agent === 'PlanningAgent' ? owner.agent : 'CodeActAgent';
  const confirmationMode = owner?.confirmation_mode ?? false;
  return {
    agent_settings: { agent, llm: { model: c.llm_model } },
    conversation_settings: { confirmation_mode: confirmationMode },
    llm_model: c.llm_model,
    agent,
    confirmation_mode: confirmationMode,
    // No analytics consent is stored here: Canvas would ask on every load and fail to save the answer
    // with this key. Declined, so it asks nothing and sends no telemetry for this backend.
    misc_settings: { app_preferences: { user_consents_to_analytics: false } },
  };
}

export const conversationSettingsSchema = z.lazy(() =>
  z.object({
    agent_settings: z.object({ agent: z.string(), llm: z.object({ model: z.nullable(z.string()) }) }),
    conversation_settings: z.object({ confirmation_mode: z.boolean() }),
    llm_model: z.nullable(z.string()),
    agent: z.string(),
    confirmation_mode: z.boolean(),
    misc_settings: z.object({ app_preferences: z.object({ user_consents_to_analytics: z.literal(false) }) }),
  }),
);
