import type { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { ConversationStore, StartTaskStore } from '#shared/conversations/conversation-store.ts';
import type {
  AppConversation,
  AppConversationStartTask,
  ConversationRecord,
  ConversationSearch,
} from '#shared/conversations/model.ts';
import { normalizeId, ownedConversation, ownedConversations } from '#shared/conversations/owned.ts';
import type { SandboxQueue } from '#shared/sandboxes/queue.ts';
import { toAppConversation, toStartTask } from '#shared/conversations/views.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';

/** What the reads are built on. */
export interface ConversationReadDeps {
  conversations: ConversationStore;
  tasks: StartTaskStore;
  sandboxes: Pick<SandboxQueue, 'statuses'>;
  cursors: CursorCodec;
  keys: ConversationKeys;
}

/**
 * Conversations as their owner reads them through the V1 API (`/api/v1/app-conversations...`), the
 * agent-server routes and the settings a conversation's key reads: lists, searches, counts, start tasks.
 * Starts are `ConversationStart` (start.ts), commands `ConversationCommands` (commands.ts), the legacy
 * `/api/conversations` routes `LegacyConversationService` (legacy-service.ts).
 */
export class ConversationReads {
  constructor(private readonly d: ConversationReadDeps) {}

  async getMany(userId: string, ids: string[], baseUrl: string): Promise<(AppConversation | null)[]> {
    const normalized = ids.map(normalizeId);
    const found = await this.d.conversations.getMany(userId, normalized);
    const mine = [...found.values()];
    const sandboxes = await this.d.sandboxes.statuses(mine.flatMap((c) => (c.sandbox_id ? [c.sandbox_id] : [])));
    const keys = new Map(await Promise.all(mine.map(async (c) => [c.id, await this.d.keys.forRecord(c)] as const)));
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
            await this.d.keys.forRecord(c),
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
