import type { ApiKeys } from '#shared/auth/api-keys.ts';
import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import type { EventStore } from '#shared/events/event-store.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import type { SettingsService } from '#shared/settings/service.ts';

/**
 * What one page of `GET /api/v1/users/me/export` holds at most: a Lambda answers at most 6 MB, and
 * the page is built in memory, so memory is bounded by these whatever the account's size.
 */
export const EXPORT_PAGE = { events: 500, eventBytes: 4_000_000, conversations: 100 } as const;

/** Where the next page goes on: the conversation list's position, the conversation in progress and its events'. */
export interface ExportPosition {
  /** The conversation list's start key for the next conversation (absent: from the newest). */
  list?: Record<string, unknown>;
  /** Set once the list has no more conversations. */
  listDone?: boolean;
  /** The conversation whose events continue on the next page, and from where. */
  conv?: string;
  events?: Record<string, unknown>;
}

export interface ExportedConversation {
  id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
  sandbox_id: string | null;
  selected_repository: string | null;
  selected_branch: string | null;
  git_provider: string | null;
  trigger: string | null;
  pr_number: number[];
  llm_model: string | null;
  parent_conversation_id: string | null;
  agent_type: string;
  execution_status: string | null;
  metrics: unknown;
  /** This page's share of its events, in order; `events_continue` when the next page has more of them. */
  events: AgentEventEnvelope[];
  events_continue: boolean;
}

const conversationView = (c: ConversationRecord): Omit<ExportedConversation, 'events' | 'events_continue'> => ({
  id: c.id,
  title: c.title,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
  sandbox_id: c.sandbox_id,
  selected_repository: c.selected_repository,
  selected_branch: c.selected_branch,
  git_provider: c.git_provider,
  trigger: c.trigger,
  pr_number: c.pr_number ?? [],
  llm_model: c.llm_model,
  parent_conversation_id: c.parent_conversation_id,
  agent_type: c.agent_type,
  execution_status: c.execution_status,
  metrics: c.metrics ?? null,
});

/**
 * A person's own data, a page at a time (item 7 of docs/sign-in.md, "Export and deletion"): the
 * first page carries the account, the settings as masked (secret names and `*_set` flags, never a
 * value) and the keys (never a hash); every page carries conversations, newest first, each with its
 * events in order. A conversation's events may run over several pages (`events_continue`).
 */
export class AccountExport {
  constructor(
    private readonly conversations: Pick<ConversationStore, 'list' | 'get'>,
    private readonly events: Pick<EventStore, 'query'>,
    private readonly settings: Pick<SettingsService, 'find'>,
    private readonly apiKeys: Pick<ApiKeys, 'listActive'>,
  ) {}

  async page(userId: string, at: ExportPosition | undefined) {
    const first = at === undefined;
    const pos: ExportPosition = { ...at };
    const out: ExportedConversation[] = [];
    let events = 0;
    let bytes = 0;
    const full = () =>
      events >= EXPORT_PAGE.events || bytes >= EXPORT_PAGE.eventBytes || out.length >= EXPORT_PAGE.conversations;
    while (!full()) {
      if (!pos.conv) {
        if (pos.listDone) break;
        const next = await this.conversations.list(userId, {}, 1, pos.list);
        const rec = next.items[0];
        if (next.lastKey) pos.list = next.lastKey;
        else pos.listDone = true;
        if (!rec) break;
        pos.conv = rec.id;
        delete pos.events;
        out.push({ ...conversationView(rec), events: [], events_continue: false });
      }
      let entry = out.at(-1);
      if (entry?.id !== pos.conv) {
        // A conversation carried over from the last page (deleted meanwhile: skipped).
        const rec = await this.conversations.get(userId, pos.conv);
        if (!rec) {
          delete pos.conv;
          continue;
        }
        entry = { ...conversationView(rec), events: [], events_continue: false };
        out.push(entry);
      }
      const page = await this.events.query(
        { userId, conversationId: pos.conv },
        {
          descending: false,
          limit: Math.min(100, EXPORT_PAGE.events - events),
          ...(pos.events ? { startKey: pos.events } : {}),
        },
      );
      for (const e of page.items) {
        entry.events.push(e);
        events++;
        bytes += JSON.stringify(e).length;
      }
      if (page.lastKey) {
        pos.events = page.lastKey;
        entry.events_continue = true;
      } else {
        entry.events_continue = false;
        delete pos.conv;
        delete pos.events;
      }
    }
    const done = !pos.conv && pos.listDone;
    return {
      settings: first ? await this.settings.find(userId) : null,
      api_keys: first ? await this.apiKeys.listActive(userId) : null,
      conversations: out,
      next: done ? undefined : (pos as Record<string, unknown>),
    };
  }
}
