import type { Tenant } from '#shared/plans/limits.ts';
import type { ConversationDeps } from '#shared/conversations/deps.ts';
import {
  queued,
  type AppConversation,
  type AppConversationStartTask,
  type ConversationCommand,
  type ConversationRecord,
  type ConversationSearch,
  type StartRequest,
} from '#shared/conversations/model.ts';
import { normalizeId, ownedConversation, ownedConversations, ownedSandbox } from '#shared/conversations/owned.ts';
import { toAppConversation, toStartTask } from '#shared/conversations/views.ts';
import { badRequest, conflict, notFound } from '#shared/http/errors.ts';

/**
 * Conversations as their owner sees them through the V1 API (`/api/v1/app-conversations...`), the
 * agent-server routes and the stream's relay: start, list, search, and talk to a running one. The
 * legacy `/api/conversations` routes have their own service (`legacy-service.ts`).
 */
export class ConversationService {
  constructor(private readonly d: ConversationDeps) {}

  private sessionKey(rec: ConversationRecord): Promise<string> {
    return this.d.keys.mint(rec.userId, rec.id, rec.keyVersion ?? 1);
  }

  /**
   * Starts a conversation and returns its start task's first snapshot. Nothing slow happens here:
   * the sandbox is started (or resumed) with its `start_conversation` command queued; the sandbox's
   * reports move the task on (WAITING_FOR_SANDBOX ... READY), and the sweeper fails one that stalls.
   */
  async start(userId: string, req: StartRequest, baseUrl: string, tenant: Tenant): Promise<AppConversationStartTask> {
    const settings = await this.d.settings.find(userId);
    if (!settings) throw badRequest('No settings stored: POST /api/settings with llm_model and llm_api_key first');
    return this.d.starts.start(userId, req, baseUrl, tenant, settings);
  }

  async getMany(userId: string, ids: string[], baseUrl: string): Promise<(AppConversation | null)[]> {
    const normalized = ids.map(normalizeId);
    const found = await this.d.conversations.getMany(userId, normalized);
    const mine = [...found.values()];
    const sandboxes = await this.d.sandboxes.statuses(mine.flatMap((c) => (c.sandbox_id ? [c.sandbox_id] : [])));
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
    const page = await this.d.conversations.list(
      userId,
      filterOf(q),
      q.limit,
      await this.d.cursors.decode(q.page_id, scope),
    );
    const sandboxes = await this.d.sandboxes.statuses(page.items.flatMap((c) => (c.sandbox_id ? [c.sandbox_id] : [])));
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
      next_page_id: await this.d.cursors.encode(page.lastKey, scope),
    };
  }

  count(userId: string, q: Omit<ConversationSearch, 'page_id' | 'limit'>): Promise<number> {
    return this.d.conversations.count(userId, filterOf(q));
  }

  async getTasks(userId: string, ids: string[], baseUrl: string): Promise<(AppConversationStartTask | null)[]> {
    const found = await this.d.tasks.getMany(ids);
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
    const page = await this.d.tasks.list(userId, {
      conversationId: q.conversation_id__eq,
      createdGte: q.created_at__gte,
      descending: q.sort_order === 'CREATED_AT_DESC',
      limit: q.limit,
      startKey: await this.d.cursors.decode(q.page_id, scope),
    });
    return {
      items: page.items.map((t) => toStartTask(t, baseUrl)),
      next_page_id: await this.d.cursors.encode(page.lastKey, scope),
    };
  }

  /** Relays a command to the conversation's sandbox (queued while the sandbox is paused or starting). */
  async command(
    userId: string,
    conversationId: string,
    make: (id: string) => ConversationCommand,
  ): Promise<{ success: true }> {
    const conversation = await this.d.conversations.get(userId, normalizeId(conversationId));
    if (!conversation) throw notFound('Conversation not found');
    if (!conversation.sandbox_id) throw conflict('The conversation has no sandbox yet; wait for its start task');
    const sandbox = await ownedSandbox(this.d.sandboxes, userId, conversation.sandbox_id);
    if (!sandbox || sandbox.status === 'ERROR' || sandbox.status === 'MISSING') {
      throw conflict(`The conversation's sandbox is ${sandbox?.status ?? 'MISSING'}; start a new conversation`);
    }
    await this.d.sandboxes.enqueueCommand(userId, sandbox.id, queued(make(conversation.id)));
    return { success: true };
  }

  /** Revokes every conversation-scoped key handed out for the conversation; returns the new one (GETs show it too). */
  async revokeKey(userId: string, conversationId: string): Promise<{ session_api_key: string }> {
    const rec = await this.owned(userId, conversationId);
    await this.d.versioned.update(userId, rec.id, (r: ConversationRecord) => ({ keyVersion: (r.keyVersion ?? 1) + 1 }));
    return { session_api_key: await this.sessionKey(await this.owned(userId, rec.id)) };
  }

  /** The caller's conversation by id (dashes and case as any client sends them); 404 otherwise. */
  owned(userId: string, conversationId: string): Promise<ConversationRecord> {
    return ownedConversation(this.d.conversations, userId, conversationId);
  }

  /** The caller's conversation records by id, in request order (null for one not theirs); the agent-server routes shape them. */
  ownedMany(userId: string, ids: string[]): Promise<(ConversationRecord | null)[]> {
    return ownedConversations(this.d.conversations, userId, ids);
  }

  /** A page of the caller's conversation records, newest first, and the next page's cursor (the agent-server search). */
  async recordPage(
    userId: string,
    limit: number,
    pageId: string | undefined,
  ): Promise<{ items: ConversationRecord[]; next_page_id: string | null }> {
    const scope = `${userId}:agent-server-conversations`;
    const page = await this.d.conversations.list(userId, {}, limit, await this.d.cursors.decode(pageId, scope));
    return { items: page.items, next_page_id: await this.d.cursors.encode(page.lastKey, scope) };
  }

  /** How many conversations the caller has (the per-user counter). */
  countAll(userId: string): Promise<number> {
    return this.d.conversations.count(userId, {});
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
