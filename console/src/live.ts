import { api, query } from './api.ts';
import type { AnyEvent } from './events.ts';
import type { Answer } from '../../shared/client/index.ts';

export type FeedMode = 'connecting' | 'live' | 'polling';

/** A page of events: the document's page, whose events the console reads as `AnyEvent` (events.ts, open to new kinds). */
type EventPage = Omit<Answer<'/api/v1/events/search', 'get'>, 'items'> & { items: AnyEvent[] };

/**
 * Follows a conversation's events: every event once, in order. Polls `events/search` with
 * `follow_page_id` (the server's cursor past the last event seen), at once while pages are full,
 * then every `intervalMs`. Returns a function that stops it.
 */
export function pollEvents(
  conversationId: string,
  onEvents: (events: AnyEvent[]) => void,
  onMode: (mode: FeedMode) => void,
  intervalMs = 1000,
): () => void {
  let stopped = false;
  let cursor: string | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const seen = new Set<string>();
  const tick = async () => {
    if (stopped) return;
    let again = intervalMs;
    try {
      const page = await api<EventPage>(
        'GET',
        `/api/v1/events/search${query({ conversation_id__eq: conversationId, limit: 100, page_id: cursor })}`,
      );
      if (stopped) return;
      const fresh = page.items.filter((e) => !seen.has(e.id));
      for (const e of fresh) seen.add(e.id);
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

interface StreamMessage extends AnyEvent {
  seq: number;
  /** An `EventReference` (an event over the stream's frame size): where to fetch it. */
  href?: string;
}

/**
 * Follows a conversation's events, every event once and in order: the live stream
 * (`/sockets/events/{id}`, shared/stream/messages.ts) with the session cookie, or with a single-use
 * ticket when the cookie is not taken there; polling while the stream is down, and a reconnect with
 * `after_seq` (the last `seq` seen) so nothing is missed or repeated. Returns a function that stops it.
 */
export function followEvents(
  conversationId: string,
  onEvents: (events: AnyEvent[]) => void,
  onMode: (mode: FeedMode) => void,
): () => void {
  let stopped = false;
  let lastSeq = 0;
  let failures = 0;
  let socket: WebSocket | undefined;
  let current: WebSocket | undefined;
  let stopPolling: (() => void) | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const seen = new Set<string>();
  const deliver = (events: AnyEvent[]) => {
    const fresh = events.filter((e) => !seen.has(e.id));
    for (const e of fresh) seen.add(e.id);
    if (fresh.length && !stopped) onEvents(fresh);
  };
  const poll = () => {
    stopPolling ??= pollEvents(conversationId, deliver, (m) => !socket && onMode(m));
  };
  const connect = (ticket?: string) => {
    if (stopped) return;
    const url = new URL(`/sockets/events/${encodeURIComponent(conversationId)}`, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    if (lastSeq > 0) url.searchParams.set('after_seq', String(lastSeq));
    else url.searchParams.set('resend_all', 'true');
    if (ticket) url.searchParams.set('ticket', ticket);
    const ws = new WebSocket(url);
    current = ws;
    // Messages are handled one after another: a reference fetched over HTTP keeps its place.
    let chain = Promise.resolve();
    ws.onopen = () => {
      failures = 0;
      socket = ws;
      stopPolling?.();
      stopPolling = undefined;
      onMode('live');
    };
    ws.onmessage = (m) => {
      chain = chain.then(async () => {
        let msg: StreamMessage;
        try {
          msg = JSON.parse(String(m.data)) as StreamMessage;
        } catch {
          return;
        }
        if (typeof msg.seq !== 'number' || msg.seq <= lastSeq) return;
        let event: AnyEvent | undefined = msg;
        if (msg.kind === 'EventReference' && typeof msg.href === 'string' && msg.href.startsWith('/api/')) {
          event = (await api<{ items: AnyEvent[] }>('GET', msg.href).catch(() => ({ items: [] }))).items[0];
          if (!event) return ws.close(); // reconnect from lastSeq rather than skip it
        }
        lastSeq = msg.seq;
        deliver([event]);
      });
    };
    ws.onclose = (c) => {
      if (socket === ws) socket = undefined;
      if (stopped) return;
      // A refused connection is closed with 4401 (shared/stream/messages.ts CLOSE): the cookie was not
      // taken there, so a single-use ticket from an authenticated POST.
      if (c.code === 4401 && !ticket) {
        api<Answer<'/api/v1/app-conversations/{conversation_id}/stream-tickets', 'post'>>(
          'POST',
          `/api/v1/app-conversations/${encodeURIComponent(conversationId)}/stream-tickets`,
        ).then(
          (t) => connect(t.ticket),
          () => reconnectLater(),
        );
        return;
      }
      reconnectLater();
    };
  };
  const reconnectLater = () => {
    poll();
    failures++;
    retry = setTimeout(() => connect(), Math.min(30_000, 1000 * 2 ** Math.min(failures, 5)));
  };
  if (typeof WebSocket === 'function') connect();
  else poll();
  return () => {
    stopped = true;
    clearTimeout(retry);
    stopPolling?.();
    current?.close();
  };
}
