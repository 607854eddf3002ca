import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import type { EventStore } from '#shared/events/event-store.ts';
import type { EventSearch } from '#shared/events/model.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import { invalidField, notFound } from '#shared/http/errors.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';

export interface EventPageView {
  items: AgentEventEnvelope[];
  next_page_id: string | null;
  /**
   * Ascending searches only: a cursor after the last event seen (or the one given when nothing new
   * came), to poll with for events that arrive later. Following it, every event is seen once, in order.
   */
  follow_page_id?: string | null;
}

/** Reading a conversation's events (its owner only). */
export class EventService {
  constructor(
    private readonly events: EventStore,
    private readonly conversations: ConversationStore,
    private readonly cursors: CursorCodec,
  ) {}

  /** The conversation's normalised id if it is the caller's; 404 otherwise (a foreign id is unknown). */
  async owned(userId: string, conversationId: string): Promise<string> {
    const id = conversationId.replaceAll('-', '').toLowerCase();
    const conversation = await this.conversations.get(userId, id);
    if (!conversation || conversation.userId !== userId) throw notFound('Conversation not found');
    return id;
  }

  async search(userId: string, q: EventSearch): Promise<EventPageView> {
    const conversationId = await this.owned(userId, q.conversation_id__eq);
    const descending = q.sort_order === 'TIMESTAMP_DESC';
    const scope = `${userId}:events:${conversationId}:${q.sort_order}`;
    if (q.after_seq !== undefined && (descending || q.page_id))
      throw invalidField(
        ['query', 'after_seq'],
        'after_seq goes with sort_order TIMESTAMP and no page_id',
        q.after_seq,
      );
    // A plain number is enough here: the conversation is the caller's, checked above (cursors are signed to keep them in one partition).
    const startKey = q.after_seq !== undefined ? { seq: q.after_seq } : await this.cursors.decode(q.page_id, scope);
    const page = await this.events.query(
      { userId, conversationId },
      {
        kind: q.kind__eq,
        timestampGte: q.timestamp__gte,
        timestampLt: q.timestamp__lt,
        descending,
        limit: q.limit,
        startKey,
      },
    );
    const view: EventPageView = { items: page.items, next_page_id: await this.cursors.encode(page.lastKey, scope) };
    if (!descending)
      view.follow_page_id =
        (await this.cursors.encode(page.lastKey ?? page.tailKey ?? startKey, scope)) ?? q.page_id ?? null;
    return view;
  }

  async count(userId: string, q: Omit<EventSearch, 'page_id' | 'after_seq' | 'limit' | 'sort_order'>): Promise<number> {
    const conversationId = await this.owned(userId, q.conversation_id__eq);
    return this.events.count(
      { userId, conversationId },
      { kind: q.kind__eq, timestampGte: q.timestamp__gte, timestampLt: q.timestamp__lt },
    );
  }
}
