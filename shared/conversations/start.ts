import { limitRefusal, type Tenant } from '#shared/plans/limits.ts';
import { DEFAULT_PLANS, type Plans } from '#shared/plans/model.ts';
import { randomUUID } from 'node:crypto';
import {
  ConversationLimitError,
  type ConversationStore,
  type StartTaskStore,
} from '#shared/conversations/conversation-store.ts';
import {
  queued,
  type AppConversationStartTask,
  type ConversationCommand,
  type ConversationRecord,
  type SandboxSummary,
  type StartRequest,
  type StartTaskRecord,
} from '#shared/conversations/model.ts';
import { maskMcp, mcpSecretsOf } from '#shared/conversations/mcp-secrets.ts';
import { ownedSandbox } from '#shared/conversations/owned.ts';
import { toStartTask } from '#shared/conversations/views.ts';
import { ApiError, badRequest, conflict, notFound } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import { launchOptionsOf } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';
import type { MaskedSettings, SettingsService } from '#shared/settings/service.ts';
import type { PlatformLlmPolicy } from '#shared/llm/policy.ts';

const newId = () => randomUUID().replaceAll('-', '');
const hostOf = (baseUrl: string) => new URL(baseUrl).host;

/** What conversations use of the sandbox service (a view of it, not a port: it has one implementation). */
export type ConversationSandboxes = Pick<SandboxService, 'start' | 'resume' | 'statuses' | 'enqueueCommand'>;

/** A title a person recognises: the given one, else the task, else the start of the first message. */
function titleFor(req: StartRequest, id: string): string {
  if (req.title) return req.title;
  if (req.suggested_task) return `#${req.suggested_task.issue_number}: ${req.suggested_task.title}`.slice(0, 512);
  if (req.create_microagent) return `Microagent for ${req.create_microagent.repo}`;
  const text = req.initial_message?.content.find((c) => c.type === 'text');
  if (text && text.type === 'text') return text.text.replace(/\s+/g, ' ').trim().slice(0, 80);
  return `Conversation ${id.slice(0, 5)}`;
}

/**
 * A conversation's start, the one both audiences share: the V1 start (`startWithSettings`) and the
 * legacy create (`legacy-service.ts`) read the settings and map errors their own way, then call `start`.
 */
export class ConversationStart {
  constructor(
    private readonly conversations: ConversationStore,
    private readonly tasks: StartTaskStore,
    /** Reads the caller's settings (the V1 start) and seals a request's MCP secrets. */
    private readonly settings: Pick<SettingsService, 'find' | 'sealFor'>,
    private readonly sandboxes: ConversationSandboxes,
    /** The plans (`max_conversations`): read by starts only, whose functions declare them. */
    private readonly plans: () => Plans = () => DEFAULT_PLANS,
    private readonly now: () => Date = () => new Date(),
    /** Platform models (no user key needed; the plan must allow them); none: every model is a user-key model. */
    private readonly platformLlms?: PlatformLlmPolicy,
  ) {}

  /** The V1 API's start (`POST /api/v1/app-conversations`), over the caller's stored settings: 400 without any. */
  async startWithSettings(
    userId: string,
    req: StartRequest,
    baseUrl: string,
    tenant: Tenant,
  ): Promise<AppConversationStartTask> {
    const settings = await this.settings.find(userId);
    if (!settings) throw badRequest('No settings stored: POST /api/settings with llm_model and llm_api_key first');
    return this.start(userId, req, baseUrl, tenant, settings);
  }

  /**
   * The start, over the settings the caller read (masked: that a key is set is all a start checks; the
   * sandbox opens the secrets with its start configuration). Each record is written once, naming the
   * others before they exist: the conversation (its sandbox's id and its task's), the task, the sandbox
   * with its first command queued. The sandbox's launch options come from the same settings. Nothing
   * slow happens here: the sandbox's reports move the task on (WAITING_FOR_SANDBOX ... READY), and the
   * sweeper fails one that stalls.
   */
  async start(
    userId: string,
    req: StartRequest,
    baseUrl: string,
    tenant: Tenant,
    settings: MaskedSettings,
  ): Promise<AppConversationStartTask> {
    const model = req.llm_model ?? settings.llm_model;
    // A platform model is paid by the platform through its LLM gateway: no user key, but the plan must allow it (403).
    const platform = this.platformLlms?.check(model, tenant.plan);
    if (!platform && !settings.llm_api_key_set)
      throw badRequest('No LLM API key in your settings: POST /api/settings with llm_api_key first');
    if (!model) throw badRequest('No LLM model: set llm_model in your settings or in the request');

    let existing: SandboxSummary | undefined;
    if (req.sandbox_id) {
      const found = await ownedSandbox(this.sandboxes, userId, req.sandbox_id);
      if (!found) throw notFound('Sandbox not found');
      if (found.status === 'ERROR' || found.status === 'MISSING')
        throw conflict(
          `Sandbox ${found.id} is ${found.status}; start a conversation without sandbox_id to get a new one`,
        );
      existing = found;
    }

    // Sealed before anything is written: a conversation's MCP secrets never sit in a record in the clear.
    const mcpSecrets = mcpSecretsOf(req.mcp_config);
    const mcpSecretsSealed = mcpSecrets ? await this.settings.sealFor(userId, JSON.stringify(mcpSecrets)) : undefined;
    const id = req.conversation_id ?? newId();
    const taskId = newId();
    const sandboxId = existing?.id ?? newId();
    const at = this.now().toISOString();
    const repository = req.selected_repository ?? req.suggested_task?.repo ?? req.create_microagent?.repo ?? null;
    const { max_conversations } = this.plans().plan(tenant.plan);
    const record: ConversationRecord = {
      id,
      userId,
      createdAt: at,
      updatedAt: at,
      sandbox_id: sandboxId,
      start_task_id: taskId,
      selected_repository: repository,
      selected_branch: req.selected_branch ?? null,
      git_provider:
        req.git_provider ??
        req.suggested_task?.git_provider ??
        req.create_microagent?.git_provider ??
        (repository ? 'github' : null),
      title: titleFor(req, id),
      trigger: req.trigger ?? null,
      pr_number: req.pr_number,
      llm_model: model ?? null,
      parent_conversation_id: req.parent_conversation_id ?? null,
      agent_type: req.agent_type,
      execution_status: null,
      metrics: null,
      version: 1,
    };
    const created = await this.conversations.create(record, max_conversations).catch((err: unknown) => {
      if (err instanceof ConversationLimitError)
        throw limitRefusal(
          'max_conversations',
          err.limit,
          err.used,
          `The plan allows at most ${err.limit} conversations per user and ${err.used} are kept: delete one first`,
        );
      throw err;
    });
    if (!created) throw conflict(`Conversation id ${id} is already taken`);

    // WAITING_FOR_SANDBOX from its first write: the sandbox is asked for next, and only the command
    // queued with it (after this write) lets the sandbox report anything.
    const task: StartTaskRecord = {
      id: taskId,
      userId,
      status: 'WAITING_FOR_SANDBOX',
      detail: null,
      app_conversation_id: id,
      sandbox_id: sandboxId,
      request: { ...req, conversation_id: id, mcp_config: maskMcp(req.mcp_config) },
      ...(mcpSecretsSealed ? { mcpSecretsSealed } : {}),
      createdAt: at,
      updatedAt: at,
    };
    await this.tasks.create(task);

    const command: ConversationCommand = { type: 'start_conversation', conversation_id: id, start_task_id: taskId };
    const options = launchOptionsOf(settings);
    try {
      if (!existing)
        await this.sandboxes.start(userId, undefined, hostOf(baseUrl), tenant, {
          id: sandboxId,
          options,
          commands: [queued(command)],
        });
      else {
        if (existing.status === 'PAUSED')
          await this.sandboxes.resume(userId, existing.id, hostOf(baseUrl), tenant, options);
        await this.sandboxes.enqueueCommand(userId, existing.id, queued(command));
      }
    } catch (err) {
      const detail =
        err instanceof ApiError ? `Could not get a sandbox: ${err.message}` : 'Could not get a sandbox: internal error';
      if (!(err instanceof ApiError))
        logger.error('conversation.start failed', { conversationId: id, error: err as Error });
      // The conversation keeps naming the sandbox it was started for (none, if it was refused: its views
      // show no sandbox status, and a command is a 409); the task says why.
      await this.tasks.transition(task.id, ['WAITING_FOR_SANDBOX'], 'ERROR', { detail });
      // A plan's limit refuses the request itself (402 naming the limit); the task says why too.
      if (err instanceof ApiError && err.status === 402) throw err;
      return toStartTask({ ...task, status: 'ERROR', detail }, baseUrl);
    }
    logger.info('conversation.started', { conversationId: id, userId, sandboxId });
    return toStartTask(task, baseUrl);
  }
}
