import type { ConversationRef, EventStore } from '#shared/events/event-store.ts';
import type { StreamQuery } from '#shared/stream/messages.ts';

/** At most this many events are read (newest first) to find where `after_timestamp` falls; further back, everything is resent. */
export const SINCE_SCAN_EVENTS = 1000;
const PAGE = 100;

const instant = (t: string): number | undefined => {
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
};

/** Whether event time `t` is at or before `bound` (as instants when both parse, else as the strings they are). */
function atOrBefore(t: string, bound: string): boolean {
  const a = instant(t);
  const b = instant(bound);
  return a !== undefined && b !== undefined ? a <= b : t <= bound;
}

/**
 * `resend_mode=since&after_timestamp=T` resolved to a position: the highest `seq` whose event is at or
 * before T, so the stream sends the events after it in `seq` order (events strictly after T; ties and
 * clock skew keep `seq` order). Reads pages newest first from the committed end, at most
 * `SINCE_SCAN_EVENTS` events; when T is older than all of those, it resends from the start.
 * `resend_mode=since` without a timestamp resends nothing, as the agent server does.
 */
export async function resolveSince(
  events: Pick<EventStore, 'lastSeq' | 'query'>,
  conversation: ConversationRef,
  afterTimestamp: string | undefined,
): Promise<number> {
  const end = await events.lastSeq(conversation);
  if (afterTimestamp === undefined) return end;
  let top = end; // the next page reads top, top-1, ...: below the committed end every number is stored
  while (top > 0 && end - top < SINCE_SCAN_EVENTS) {
    const page = await events.query(conversation, { descending: true, limit: PAGE, startKey: { seq: top + 1 } });
    for (const [i, event] of page.items.entries()) if (atOrBefore(event.timestamp, afterTimestamp)) return top - i;
    if (page.items.length === 0) break;
    top -= page.items.length;
  }
  return 0;
}

/** The query with `resend_mode` turned into the one position the feeds understand (`after_seq`); other queries unchanged. */
export async function resolveResendMode(
  query: StreamQuery,
  events: Pick<EventStore, 'lastSeq' | 'query'>,
  conversation: ConversationRef,
): Promise<StreamQuery> {
  if (query.after_seq !== undefined || query.resend_mode !== 'since') return query;
  return { ...query, after_seq: await resolveSince(events, conversation, query.after_timestamp) };
}
