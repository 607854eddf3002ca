import { limitRefusal, type Tenant } from '#shared/plans/limits.ts';
import { DEFAULT_PLANS, type Plans } from '#shared/plans/model.ts';
import { randomUUID } from 'node:crypto';
import type { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import {
  ConversationLimitError,
  type ConversationStore,
  type StartTaskStore,
} from '#shared/conversations/conversation-store.ts';
import {
  queued,
  type AppConversation,
  type AppConversationStartTask,
  type ConversationCommand,
  type ConversationRecord,
  type ConversationSearch,
  type InitialMessage,
  type LegacyConversation,
  type LegacyCreate,
  type LegacyListQuery,
  type SandboxSummary,
  type StartRequest,
  type StartTaskRecord,
} from '#shared/conversations/model.ts';
import { maskMcp, mcpSecretsOf } from '#shared/conversations/mcp-secrets.ts';
import type { ConversationRecords } from '#shared/conversations/records.ts';
import { toAppConversation, toLegacyConversation, toStartTask } from '#shared/conversations/views.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import { ApiError, badRequest, conflict, notFound } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import { launchOptionsOf } from '#shared/sandboxes/sandbox-runtime.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';
import type { MaskedSettings, SettingsService } from '#shared/settings/service.ts';
import type { PlatformLlmPolicy } from '#shared/llm/policy.ts';

const newId = () => randomUUID().replaceAll('-', '');
const normalizeId = (id: string) => id.replaceAll('-', '').toLowerCase();
const hostOf = (baseUrl: string) => new URL(baseUrl).host;

/** What conversations use of the sandbox service (a view of it, not a port: it has one implementation). */
export type ConversationSandboxes = Pick<SandboxService, 'start' | 'resume' | 'statuses' | 'enqueueCommand'>;

/** The legacy error body OpenHands clients read: `{status: "error", message, msg_id}`. */
const legacyError = (status: number, msgId: string, message: string) =>
  new ApiError(status, { status: 'error', message, msg_id: msgId });

/** A title a person recognises: the given one, else the task, else the start of the first message. */
function titleFor(req: StartRequest, id: string): string {
  if (req.title) return req.title;
  if (req.suggested_task) return `#${req.suggested_task.issue_number}: ${req.suggested_task.title}`.slice(0, 512);
  if (req.create_microagent) return `Microagent for ${req.create_microagent.repo}`;
  const text = req.initial_message?.content.find((c) => c.type === 'text');
  if (text && text.type === 'text') return text.text.replace(/\s+/g, ' ').trim().slice(0, 80);
  return `Conversation ${id.slice(0, 5)}`;
}

/** The current key version of a user's conversation, for `ConversationKeys` (undefined: gone or not theirs). */
export const conversationKeyVersion =
  (store: ConversationStore) =>
  async (userId: string, conversationId: string): Promise<number | undefined> => {
    const rec = await store.get(userId, conversationId);
    return rec ? (rec.keyVersion ?? 1) : undefined;
  };

/** Conversations as their owner sees them: start, list, search, and talk to a running one. */
export class ConversationService {
  constructor(
    private readonly conversations: ConversationStore,
    private readonly tasks: StartTaskStore,
    private readonly settings: SettingsService,
    private readonly sandboxes: ConversationSandboxes,
    private readonly cursors: CursorCodec,
    private readonly keys: ConversationKeys,
    private readonly records: ConversationRecords,
    /** The plans (`max_conversations`): read by starts only, whose functions declare them. */
    private readonly plans: () => Plans = () => DEFAULT_PLANS,
    private readonly now: () => Date = () => new Date(),
    /** Platform models (no user key needed; the plan must allow them); none: every model is a user-key model. */
    private readonly platformLlms?: PlatformLlmPolicy,
  ) {}

  private sessionKey(rec: ConversationRecord): Promise<string> {
    return this.keys.mint(rec.userId, rec.id, rec.keyVersion ?? 1);
  }

  /**
   * Starts a conversation and returns its start task's first snapshot. Nothing slow happens here:
   * the sandbox is started (or resumed) with its `start_conversation` command queued; the sandbox's
   * reports move the task on (WAITING_FOR_SANDBOX ... READY), and the sweeper fails one that stalls.
   */
  async start(userId: string, req: StartRequest, baseUrl: string, tenant: Tenant): Promise<AppConversationStartTask> {
    const settings = await this.settings.find(userId);
    if (!settings) throw badRequest('No settings stored: POST /api/settings with llm_model and llm_api_key first');
    return this.begin(userId, req, baseUrl, tenant, settings);
  }

  /**
   * The start, over the settings the caller read (masked: that a key is set is all a start checks; the
   * sandbox opens the secrets with its start configuration). Each record is written once, naming the
   * others before they exist: the conversation (its sandbox's id and its task's), the task, the sandbox
   * with its first command queued. The sandbox's launch options come from the same settings.
   */
  private async begin(
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
      const found = await this.sandboxOf(userId, req.sandbox_id);
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

  /** POST /api/conversations: the legacy body mapped onto the V1 start, with the legacy errors. */
  async legacyCreate(userId: string, body: LegacyCreate, baseUrl: string, tenant: Tenant) {
    const settings = await this.settings.find(userId);
    if (!settings) throw legacyError(400, 'CONFIGURATION$SETTINGS_NOT_FOUND', 'Settings not found');
    if (!settings.llm_api_key_set && !this.platformLlms?.get(settings.llm_model))
      throw legacyError(
        400,
        'STATUS$ERROR_LLM_AUTHENTICATION',
        'Error authenticating with the LLM provider. Please check your API key',
      );
    const content: InitialMessage['content'] = [];
    if (body.initial_user_msg) content.push({ type: 'text', text: body.initial_user_msg });
    if (body.image_urls?.length) content.push({ type: 'image', image_urls: body.image_urls });
    const req: StartRequest = {
      selected_repository: body.repository ?? null,
      selected_branch: body.selected_branch ?? null,
      git_provider: body.git_provider ?? null,
      initial_message: content.length ? { role: 'user', content, run: true } : null,
      replay_json: body.replay_json ?? null,
      suggested_task: body.suggested_task ?? null,
      create_microagent: body.create_microagent ?? null,
      conversation_instructions: body.conversation_instructions ?? null,
      mcp_config: body.mcp_config ?? null,
      conversation_id: body.conversation_id ?? null,
      pr_number: [],
      agent_type: 'default',
      trigger: 'gui',
    };
    let task: AppConversationStartTask;
    try {
      task = await this.begin(userId, req, baseUrl, tenant, settings);
    } catch (err) {
      if (err instanceof ApiError && err.status === 409 && body.conversation_id) {
        throw legacyError(409, 'CONVERSATION$ALREADY_EXISTS', `Conversation ${body.conversation_id} already exists`);
      }
      if (err instanceof ApiError && err.status === 400)
        throw legacyError(400, 'CONFIGURATION$SETTINGS_NOT_FOUND', err.message);
      throw err;
    }
    if (task.status === 'ERROR')
      return {
        status: 'error',
        conversation_id: task.app_conversation_id ?? '',
        message: task.detail,
        conversation_status: 'STOPPED' as const,
      };
    return {
      status: 'ok',
      conversation_id: task.app_conversation_id ?? '',
      message: null,
      conversation_status: 'STARTING' as const,
    };
  }

  async getMany(userId: string, ids: string[], baseUrl: string): Promise<(AppConversation | null)[]> {
    const normalized = ids.map(normalizeId);
    const found = await this.conversations.getMany(userId, normalized);
    const mine = [...found.values()];
    const sandboxes = await this.sandboxes.statuses(mine.flatMap((c) => (c.sandbox_id ? [c.sandbox_id] : [])));
    const keys = new Map(await Promise.all(mine.map(async (c) => [c.id, await this.sessionKey(c)] as const)));
    return normalized.map((id) => {
      const c = found.get(id);
      return c
        ? toAppConversation(c, c.sandbox_id ? sandboxes.get(c.sandbox_id) : undefined, baseUrl, keys.get(c.id)!)
        : null;
    });
  }

  async search(userId: string, q: ConversationSearch, baseUrl: string) {
    const scope = `${userId}:conversations`;
    const page = await this.conversations.list(
      userId,
      filterOf(q),
      q.limit,
      await this.cursors.decode(q.page_id, scope),
    );
    const sandboxes = await this.sandboxes.statuses(page.items.flatMap((c) => (c.sandbox_id ? [c.sandbox_id] : [])));
    return {
      items: await Promise.all(
        page.items.map(async (c) =>
          toAppConversation(
            c,
            c.sandbox_id ? sandboxes.get(c.sandbox_id) : undefined,
            baseUrl,
            await this.sessionKey(c),
          ),
        ),
      ),
      next_page_id: await this.cursors.encode(page.lastKey, scope),
    };
  }

  count(userId: string, q: Omit<ConversationSearch, 'page_id' | 'limit'>): Promise<number> {
    return this.conversations.count(userId, filterOf(q));
  }

  async getTasks(userId: string, ids: string[], baseUrl: string): Promise<(AppConversationStartTask | null)[]> {
    const found = await this.tasks.getMany(ids);
    return ids.map((id) => {
      const t = found.get(id);
      return t && t.userId === userId ? toStartTask(t, baseUrl) : null;
    });
  }

  async searchTasks(
    userId: string,
    q: { conversation_id__eq?: string; created_at__gte?: string; sort_order: string; page_id?: string; limit: number },
    baseUrl: string,
  ) {
    const scope = `${userId}:start-tasks:${q.sort_order}`;
    const page = await this.tasks.list(userId, {
      conversationId: q.conversation_id__eq,
      createdGte: q.created_at__gte,
      descending: q.sort_order === 'CREATED_AT_DESC',
      limit: q.limit,
      startKey: await this.cursors.decode(q.page_id, scope),
    });
    return {
      items: page.items.map((t) => toStartTask(t, baseUrl)),
      next_page_id: await this.cursors.encode(page.lastKey, scope),
    };
  }

  /** Relays a command to the conversation's sandbox (queued while the sandbox is paused or starting). */
  async command(
    userId: string,
    conversationId: string,
    make: (id: string) => ConversationCommand,
  ): Promise<{ success: true }> {
    const conversation = await this.conversations.get(userId, normalizeId(conversationId));
    if (!conversation) throw notFound('Conversation not found');
    if (!conversation.sandbox_id) throw conflict('The conversation has no sandbox yet; wait for its start task');
    const sandbox = await this.sandboxOf(userId, conversation.sandbox_id);
    if (!sandbox || sandbox.status === 'ERROR' || sandbox.status === 'MISSING') {
      throw conflict(`The conversation's sandbox is ${sandbox?.status ?? 'MISSING'}; start a new conversation`);
    }
    await this.sandboxes.enqueueCommand(userId, sandbox.id, queued(make(conversation.id)));
    return { success: true };
  }

  /** GET /api/conversations: the legacy list, newest first, filtered by repository and trigger. */
  async legacyList(userId: string, q: LegacyListQuery, baseUrl: string) {
    const scope = `${userId}:legacy-conversations`;
    const filter = { repository: q.selected_repository, trigger: q.conversation_trigger };
    const page = await this.conversations.list(userId, filter, q.limit, await this.cursors.decode(q.page_id, scope));
    return {
      results: await this.toLegacy(page.items, baseUrl),
      next_page_id: await this.cursors.encode(page.lastKey, scope),
    };
  }

  /** GET /api/conversations/{id}: the caller's conversation in the legacy shape; 404 otherwise. */
  async legacyGet(userId: string, conversationId: string, baseUrl: string): Promise<LegacyConversation> {
    const [view] = await this.toLegacy([await this.owned(userId, conversationId)], baseUrl);
    return view!;
  }

  /** GET /api/conversations/{id}/config (the late-2025 web UI): its sandbox as the runtime, the conversation as the session. */
  async runtimeConfig(
    userId: string,
    conversationId: string,
  ): Promise<{ runtime_id: string | null; session_id: string }> {
    const rec = await this.owned(userId, conversationId);
    return { runtime_id: rec.sandbox_id ?? null, session_id: rec.id };
  }

  /** PATCH /api/conversations/{id}: a new title. */
  async rename(userId: string, conversationId: string, title: string): Promise<true> {
    const rec = await this.owned(userId, conversationId);
    await this.records.update(userId, rec.id, { title });
    return true;
  }

  /** Revokes every conversation-scoped key handed out for the conversation; returns the new one (GETs show it too). */
  async revokeKey(userId: string, conversationId: string): Promise<{ session_api_key: string }> {
    const rec = await this.owned(userId, conversationId);
    await this.records.update(userId, rec.id, (r: ConversationRecord) => ({ keyVersion: (r.keyVersion ?? 1) + 1 }));
    return { session_api_key: await this.sessionKey(await this.owned(userId, rec.id)) };
  }

  /**
   * DELETE /api/conversations/{id}: the agent is told to stop (a pause command to its sandbox, if it
   * has one), then the record goes, and with it every conversation-scoped key (they name a record).
   */
  async remove(userId: string, conversationId: string): Promise<true> {
    const rec = await this.owned(userId, conversationId);
    if (rec.sandbox_id) {
      const sandbox = await this.sandboxOf(userId, rec.sandbox_id);
      if (sandbox && (sandbox.status === 'RUNNING' || sandbox.status === 'STARTING' || sandbox.status === 'PAUSED')) {
        await this.sandboxes.enqueueCommand(
          userId,
          sandbox.id,
          queued({ type: 'pause_conversation', conversation_id: rec.id }),
        );
      }
    }
    await this.conversations.delete(userId, rec.id);
    logger.info('conversation.deleted', { conversationId: rec.id, userId });
    return true;
  }

  /** The user's sandbox's status; undefined when unknown, deleted or another user's. */
  private async sandboxOf(userId: string, sandboxId: string): Promise<SandboxSummary | undefined> {
    const found = (await this.sandboxes.statuses([sandboxId])).get(sandboxId);
    return found?.userId === userId ? found : undefined;
  }

  /** The caller's conversation by id (dashes and case as any client sends them); 404 otherwise. */
  async owned(userId: string, conversationId: string): Promise<ConversationRecord> {
    const rec = await this.conversations.get(userId, normalizeId(conversationId));
    if (!rec) throw notFound('Conversation not found');
    return rec;
  }

  /** The caller's conversation records by id, in request order (null for one not theirs); the agent-server routes shape them. */
  async ownedMany(userId: string, ids: string[]): Promise<(ConversationRecord | null)[]> {
    const normalized = ids.map(normalizeId);
    const found = await this.conversations.getMany(userId, normalized);
    return normalized.map((id) => found.get(id) ?? null);
  }

  /** A page of the caller's conversation records, newest first, and the next page's cursor (the agent-server search). */
  async recordPage(
    userId: string,
    limit: number,
    pageId: string | undefined,
  ): Promise<{ items: ConversationRecord[]; next_page_id: string | null }> {
    const scope = `${userId}:agent-server-conversations`;
    const page = await this.conversations.list(userId, {}, limit, await this.cursors.decode(pageId, scope));
    return { items: page.items, next_page_id: await this.cursors.encode(page.lastKey, scope) };
  }

  /** How many conversations the caller has (the per-user counter). */
  countAll(userId: string): Promise<number> {
    return this.conversations.count(userId, {});
  }

  private async toLegacy(recs: ConversationRecord[], baseUrl: string): Promise<LegacyConversation[]> {
    const [sandboxes, tasks] = await Promise.all([
      this.sandboxes.statuses(recs.flatMap((c) => (c.sandbox_id ? [c.sandbox_id] : []))),
      this.tasks.getMany(recs.flatMap((c) => (c.start_task_id ? [c.start_task_id] : []))),
    ]);
    return Promise.all(
      recs.map(async (c) =>
        toLegacyConversation(
          c,
          c.sandbox_id ? sandboxes.get(c.sandbox_id) : undefined,
          tasks.get(c.start_task_id),
          baseUrl,
          await this.sessionKey(c),
        ),
      ),
    );
  }
}

function filterOf(q: Omit<ConversationSearch, 'page_id' | 'limit'>) {
  return {
    titleContains: q.title__contains,
    createdGte: q.created_at__gte,
    createdLt: q.created_at__lt,
    updatedGte: q.updated_at__gte,
    updatedLt: q.updated_at__lt,
  };
}
