import type { Tenant } from '#shared/plans/limits.ts';
import type { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { ConversationStore, StartTaskStore } from '#shared/conversations/conversation-store.ts';
import type { ConversationStart } from '#shared/conversations/start.ts';
import type { SandboxQueue } from '#shared/sandboxes/queue.ts';
import type { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import type { SettingsService } from '#shared/settings/service.ts';
import {
  queued,
  type AppConversationStartTask,
  type ConversationRecord,
  type InitialMessage,
  type LegacyConversation,
  type LegacyCreate,
  type LegacyListQuery,
  type StartRequest,
} from '#shared/conversations/model.ts';
import { ownedConversation, ownedConversations, ownedSandbox } from '#shared/conversations/owned.ts';
import { toLegacyConversation } from '#shared/conversations/views.ts';
import { ApiError } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';
import type { PlatformLlmPolicy } from '#shared/llm/policy.ts';

/** What the legacy service is built on. */
export interface LegacyConversationDeps {
  conversations: ConversationStore;
  tasks: StartTaskStore;
  settings: Pick<SettingsService, 'find'>;
  sandboxes: Pick<SandboxQueue, 'statuses' | 'enqueueCommand'>;
  cursors: CursorCodec;
  keys: ConversationKeys;
  versioned: VersionedConversationUpdate;
  starts: ConversationStart;
}

/** The legacy error body OpenHands clients read: `{status: "error", message, msg_id}`. */
const legacyError = (status: number, msgId: string, message: string) =>
  new ApiError(status, { status: 'error', message, msg_id: msgId });

/**
 * Conversations through the legacy (V0) `/api/conversations` routes the OpenHands web UI of late 2025
 * and agent-server clients call: create (the V1 start, `start.ts`, with the legacy errors), list, get,
 * rename, its runtime config, delete. The V1 API has its own services (`reads.ts`, `commands.ts`, `start.ts`).
 */
export class LegacyConversationService {
  constructor(
    private readonly d: LegacyConversationDeps,
    /** Platform models (no user key needed); none: every model is a user-key model. */
    private readonly platformLlms?: PlatformLlmPolicy,
  ) {}

  /** POST /api/conversations: the legacy body mapped onto the V1 start, with the legacy errors. */
  async create(userId: string, body: LegacyCreate, baseUrl: string, tenant: Tenant) {
    const settings = await this.d.settings.find(userId);
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
      task = await this.d.starts.start(userId, req, baseUrl, tenant, settings);
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

  /** GET /api/conversations: the legacy list, newest first, filtered by repository and trigger. */
  async list(userId: string, q: LegacyListQuery, baseUrl: string) {
    const scope = `${userId}:legacy-conversations`;
    const filter = { repository: q.selected_repository, trigger: q.conversation_trigger };
    const page = await this.d.conversations.list(
      userId,
      filter,
      q.limit,
      await this.d.cursors.decode(q.page_id, scope),
    );
    return {
      results: await this.toLegacy(page.items, baseUrl),
      next_page_id: await this.d.cursors.encode(page.lastKey, scope),
    };
  }

  /** GET /api/conversations/{id}: the caller's conversation in the legacy shape; 404 otherwise. */
  async get(userId: string, conversationId: string, baseUrl: string): Promise<LegacyConversation> {
    const [view] = await this.toLegacy([await this.owned(userId, conversationId)], baseUrl);
    return view!;
  }

  /** GET /api/conversations/{id}/config (the late-2025 web UI): its sandbox as the runtime, the conversation as the session. */
  async config(userId: string, conversationId: string): Promise<{ runtime_id: string | null; session_id: string }> {
    const rec = await this.owned(userId, conversationId);
    return { runtime_id: rec.sandbox_id ?? null, session_id: rec.id };
  }

  /** PATCH /api/conversations/{id}: a new title. */
  async rename(userId: string, conversationId: string, title: string): Promise<true> {
    const rec = await this.owned(userId, conversationId);
    await this.d.versioned.update(userId, rec.id, { title });
    return true;
  }

  /**
   * DELETE /api/conversations/{id}: the agent is told to stop (a pause command to its sandbox, if it
   * has one), then the record goes, and with it every conversation-scoped key (they name a record).
   */
  async remove(userId: string, conversationId: string): Promise<true> {
    const rec = await this.owned(userId, conversationId);
    if (rec.sandbox_id) {
      const sandbox = await ownedSandbox(this.d.sandboxes, userId, rec.sandbox_id);
      if (sandbox && (sandbox.status === 'RUNNING' || sandbox.status === 'STARTING' || sandbox.status === 'PAUSED')) {
        await this.d.sandboxes.enqueueCommand(
          userId,
          sandbox.id,
          queued({ type: 'pause_conversation', conversation_id: rec.id }),
        );
      }
    }
    await this.d.conversations.delete(userId, rec.id);
    logger.info('conversation.deleted', { conversationId: rec.id, userId });
    return true;
  }

  /** The caller's conversation by id (dashes and case as any client sends them); 404 otherwise. */
  owned(userId: string, conversationId: string): Promise<ConversationRecord> {
    return ownedConversation(this.d.conversations, userId, conversationId);
  }

  /** The caller's conversation records by id, in request order (null for one not theirs; the agent server's batch get). */
  ownedMany(userId: string, ids: string[]): Promise<(ConversationRecord | null)[]> {
    return ownedConversations(this.d.conversations, userId, ids);
  }

  private async toLegacy(recs: ConversationRecord[], baseUrl: string): Promise<LegacyConversation[]> {
    const [sandboxes, tasks] = await Promise.all([
      this.d.sandboxes.statuses(recs.flatMap((c) => (c.sandbox_id ? [c.sandbox_id] : []))),
      this.d.tasks.getMany(recs.flatMap((c) => (c.start_task_id ? [c.start_task_id] : []))),
    ]);
    return Promise.all(
      recs.map(async (c) =>
        toLegacyConversation(
          c,
          c.sandbox_id ? sandboxes.get(c.sandbox_id) : undefined,
          tasks.get(c.start_task_id),
          baseUrl,
          await this.d.keys.forRecord(c),
        ),
      ),
    );
  }
}
