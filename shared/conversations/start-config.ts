import type { ConversationRecord, StartRequest } from '#shared/conversations/model.ts';
import type { StartConfig } from '#shared/protocol.ts';
import { agentChoices, type McpConfig, type ResolvedSettings } from '#shared/settings/model.ts';

const DEFAULT_HOSTS: Record<string, string> = {
  github: 'github.com',
  gitlab: 'gitlab.com',
  bitbucket: 'bitbucket.org',
};
/** The user name each provider expects beside a token in HTTP basic auth. */
const TOKEN_USERS: Record<string, string> = {
  github: 'x-access-token',
  gitlab: 'oauth2',
  bitbucket: 'x-token-auth',
  enterprise_sso: 'oauth2',
};

/** `https://host/owner/repo.git`; a host given with a scheme (e.g. a self-hosted http server) keeps it. */
export function cloneUrl(provider: string, repository: string, host: string | null | undefined): string {
  const base = host ?? DEFAULT_HOSTS[provider];
  if (!base)
    throw new Error(`No host known for git provider ${provider}: set secrets_store.provider_tokens.${provider}.host`);
  const root = /^https?:\/\//.test(base) ? base.replace(/\/+$/, '') : `https://${base}`;
  return `${root}/${repository}.git`;
}

function mergeMcp(base: McpConfig, extra: StartRequest['mcp_config']): McpConfig {
  if (!extra) return base;
  const byKey = <T>(a: T[], b: T[], key: (t: T) => string) => [
    ...a.filter((x) => !b.some((y) => key(y) === key(x))),
    ...b,
  ];
  return {
    sse_servers: byKey(
      base.sse_servers,
      extra.sse_servers.map((s) => ({ url: s.url, api_key: s.api_key ?? null })),
      (s) => s.url,
    ),
    shttp_servers: byKey(
      base.shttp_servers,
      extra.shttp_servers.map((s) => ({ url: s.url, api_key: s.api_key ?? null })),
      (s) => s.url,
    ),
    stdio_servers: byKey(
      base.stdio_servers,
      extra.stdio_servers.map((s) => ({
        ...s,
        env: Object.fromEntries(Object.entries(s.env).filter(([, v]) => v !== null)) as Record<string, string>,
      })),
      (s) => s.name,
    ),
  };
}

function firstMessage(req: StartRequest): StartConfig['initial_message'] {
  if (req.initial_message) return { content: req.initial_message.content, run: req.initial_message.run };
  if (req.suggested_task) {
    const t = req.suggested_task;
    const what =
      t.task_type === 'MERGE_CONFLICTS'
        ? `resolve the merge conflicts of pull request #${t.issue_number}`
        : t.task_type === 'FAILING_CHECKS'
          ? `fix the failing checks of pull request #${t.issue_number}`
          : t.task_type === 'UNRESOLVED_COMMENTS'
            ? `address the unresolved review comments of pull request #${t.issue_number}`
            : `fix issue #${t.issue_number}`;
    return {
      content: [
        {
          type: 'text',
          text: `Please ${what} in ${t.repo}: "${t.title}". Make the change in the repository, run its tests if it has any, and summarise what you did.`,
        },
      ],
      run: true,
    };
  }
  if (req.create_microagent) {
    const m = req.create_microagent;
    return {
      content: [
        {
          type: 'text',
          text: `Please create a microagent for the repository ${m.repo}: a Markdown file under .openhands/microagents/ (for example .openhands/microagents/repo.md) that tells a coding agent what it needs to know to work in this repository: its purpose, layout, how to build and test it, and its conventions.${m.title ? ` Topic: ${m.title}.` : ''}`,
        },
      ],
      run: true,
    };
  }
  return null;
}

/** Builds a conversation's start configuration from its request and its owner's settings. */
export function buildStartConfig(
  conversation: ConversationRecord,
  req: StartRequest,
  settings: ResolvedSettings,
  startTaskId: string,
): StartConfig {
  const repo = conversation.selected_repository;
  const provider = conversation.git_provider ?? 'github';
  const token = settings.secrets_store.provider_tokens[provider as keyof typeof settings.secrets_store.provider_tokens];
  return {
    conversation_id: conversation.id,
    start_task_id: startTaskId,
    llm: {
      model: conversation.llm_model ?? settings.llm_model ?? '',
      api_key: settings.llm_api_key ?? '',
      base_url: settings.llm_base_url || null,
    },
    max_iterations: settings.max_iterations ?? null,
    max_budget_per_task: settings.max_budget_per_task ?? null,
    confirmation_mode: settings.confirmation_mode ?? false,
    git_identity: { name: settings.git_user_name ?? null, email: settings.git_user_email ?? null },
    repository: repo
      ? {
          full_name: repo,
          provider,
          clone_url: cloneUrl(provider, repo, token?.host),
          branch: conversation.selected_branch,
          auth_header: token
            ? `Authorization: Basic ${Buffer.from(`${TOKEN_USERS[provider] ?? 'oauth2'}:${token.token}`).toString('base64')}`
            : null,
        }
      : null,
    secrets: Object.fromEntries(Object.entries(settings.secrets_store.custom_secrets).map(([k, v]) => [k, v.secret])),
    mcp_config: mergeMcp(settings.mcp_config, req.mcp_config),
    instructions: req.conversation_instructions ?? null,
    initial_message: firstMessage(req),
    replay_json: req.replay_json ?? null,
    agent_type: req.agent_type,
    // A value stored before `agent` was checked against the choices runs the default agent.
    agent:
      req.agent_type === 'plan' ? 'PlanningAgent' : (agentChoices.find((a) => a === settings.agent) ?? 'CodeActAgent'),
    security_analyzer: settings.security_analyzer === 'llm' ? 'llm' : null,
    condenser: { enabled: settings.enable_default_condenser ?? true, max_size: settings.condenser_max_size ?? null },
    search: settings.search_api_key ? { api_key: settings.search_api_key } : null,
    language: settings.language || null,
  };
}
