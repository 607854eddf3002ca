import { maskMcp } from '#shared/conversations/mcp-secrets.ts';
import type {
  AppConversation,
  AppConversationStartTask,
  ConversationRecord,
  LegacyConversation,
  SandboxSummary,
  StartTaskRecord,
} from '#shared/conversations/model.ts';

/** How a conversation, its start task and its sandbox's status look to clients (the V1 and the legacy shapes). */

/** The legacy status of a conversation, from its sandbox (see OPENHANDS-REFERENCE: the V1 mapping). */
function legacyStatus(
  sandbox: SandboxSummary | undefined,
  task: StartTaskRecord | undefined,
): LegacyConversation['status'] {
  if (task?.status === 'ERROR') return 'ERROR';
  if (!sandbox) return 'STARTING';
  return (
    { RUNNING: 'RUNNING', STARTING: 'STARTING', PAUSED: 'STOPPED', ERROR: 'ERROR', MISSING: 'ARCHIVED' } as const
  )[sandbox.status];
}

/** OpenHands' runtime status names (the UI shows them as the conversation's state). */
function runtimeStatus(sandbox: SandboxSummary | undefined, task: StartTaskRecord | undefined): string | null {
  if (task?.status === 'ERROR' || sandbox?.status === 'ERROR') return 'STATUS$ERROR';
  if (sandbox?.status === 'PAUSED' || sandbox?.status === 'MISSING') return 'STATUS$STOPPED';
  switch (task?.status) {
    case undefined:
      return null;
    case 'READY':
      return sandbox?.status === 'RUNNING' ? 'STATUS$READY' : 'STATUS$STARTING_RUNTIME';
    case 'PREPARING_REPOSITORY':
    case 'RUNNING_SETUP_SCRIPT':
      return 'STATUS$SETTING_UP_WORKSPACE';
    case 'SETTING_UP_GIT_HOOKS':
      return 'STATUS$SETTING_UP_GIT_HOOKS';
    case 'STARTING_CONVERSATION':
      return 'STATUS$RUNTIME_STARTED';
    default:
      return 'STATUS$STARTING_RUNTIME';
  }
}

export function toLegacyConversation(
  rec: ConversationRecord,
  sandbox: SandboxSummary | undefined,
  task: StartTaskRecord | undefined,
  baseUrl: string,
  sessionKey: string,
): LegacyConversation {
  return {
    conversation_id: rec.id,
    title: rec.title,
    selected_repository: rec.selected_repository,
    selected_branch: rec.selected_branch,
    git_provider: rec.git_provider,
    last_updated_at: rec.updatedAt,
    created_at: rec.createdAt,
    status: legacyStatus(sandbox, task),
    runtime_status: runtimeStatus(sandbox, task),
    trigger: rec.trigger,
    url: `${baseUrl}/api/conversations/${rec.id}`,
    session_api_key: sessionKey,
    pr_number: rec.pr_number,
    conversation_version: 'V1',
    sub_conversation_ids: [],
  };
}

export function toAppConversation(
  rec: ConversationRecord,
  sandbox: SandboxSummary | undefined,
  baseUrl: string,
  sessionKey: string | null,
): AppConversation {
  return {
    id: rec.id,
    created_by_user_id: rec.userId,
    sandbox_id: rec.sandbox_id,
    selected_repository: rec.selected_repository,
    selected_branch: rec.selected_branch,
    git_provider: rec.git_provider,
    title: rec.title,
    trigger: rec.trigger,
    pr_number: rec.pr_number,
    llm_model: rec.llm_model,
    metrics: rec.metrics,
    parent_conversation_id: rec.parent_conversation_id,
    created_at: rec.createdAt,
    updated_at: rec.updatedAt,
    sandbox_status: sandbox?.status ?? null,
    execution_status: rec.execution_status,
    // Served by this control plane and relayed to the sandbox (see the conversation routes).
    conversation_url: `${baseUrl}/api/conversations/${rec.id}`,
    // A key valid only for this conversation's routes (the sandbox's own key stays with the sandbox).
    session_api_key: sessionKey,
  };
}

export function toStartTask(t: StartTaskRecord, baseUrl: string): AppConversationStartTask {
  return {
    id: t.id,
    created_by_user_id: t.userId,
    status: t.status,
    detail: t.detail,
    app_conversation_id: t.app_conversation_id,
    sandbox_id: t.sandbox_id,
    agent_server_url: t.status === 'READY' ? `${baseUrl}/api/conversations/${t.app_conversation_id}` : null,
    // Masked again here, so a record written before MCP secrets were sealed shows none either.
    request: { ...t.request, mcp_config: maskMcp(t.request.mcp_config) } as Record<string, unknown>,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  };
}
