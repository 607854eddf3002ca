import { api, query } from './api.ts';
import type { AnyEvent } from './events.ts';

export type FeedMode = 'connecting' | 'live' | 'polling';

interface EventPage {
  items: AnyEvent[];
  next_page_id: string | null;
  follow_page_id?: string | null;
}

/**
 * Follows a conversation's events: every event once, in order. Polls `events/search` with
 * `follow_page_id` (the server's cursor past the last event seen), at once while pages are full,
 * then every `intervalMs`. Returns a function that stops it.
 */
export function pollEvents(conversationId: string, onEvents: (events: AnyEvent[]) => void, onMode: (mode: FeedMode) => void, intervalMs = 1000): () => void {
  let stopped = false;
  let cursor: string | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const seen = new Set<string>();
  const tick = async () => {
    if (stopped) return;
    let again = intervalMs;
    try {
      const page = await api<EventPage>('GET', `/api/v1/events/search${query({ conversation_id__eq: conversationId, limit: 100, page_id: cursor })}`);
      if (stopped) return;
      const fresh = page.items.filter((e) => !seen.has(e.id));
      fresh.forEach((e) => seen.add(e.id));
      if (fresh.length) onEvents(fresh);
      cursor = page.next_page_id ?? page.follow_page_id ?? cursor;
      if (page.next_page_id) again = 0;
      onMode('polling');
    } catch {
      again = intervalMs * 3;
    }
    timer = setTimeout(() => void tick(), again);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** Follows a conversation's events: the live stream when it is there, else polling. */
export function followEvents(conversationId: string, onEvents: (events: AnyEvent[]) => void, onMode: (mode: FeedMode) => void): () => void {
  return pollEvents(conversationId, onEvents, onMode);
}
