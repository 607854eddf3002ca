import * as z from '#shared/zod.ts';
import { afterSeqParam } from '#shared/events/model.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';

/*
 * The wire protocol of the client event stream, the same locally (the gateway's WebSocket) and on
 * AWS (API Gateway's WebSocket API). Facts it follows from the OpenHands V1 web UI: it connects to
 * `{conversation_url host}/sockets/events/{conversation_id}?resend_all=true&session_api_key=<key>`,
 * parses every message as one event (an object with `id`, `timestamp` and `source`), counts every
 * message against `GET /api/v1/events/count` while it loads history, and reconnects 3 s after any close.
 */

/** The stream's path; `{conversation_id}` as everywhere (32 hex, dashes optional). */
export const STREAM_PATH = '/sockets/events/{conversation_id}';
export const STREAM_PATH_PATTERN = /^\/sockets\/events\/([^/]+)$/;

/**
 * The largest message sent as it is: API Gateway's frame size (its message cap is 128 KB). An
 * event whose message would be larger goes out as an `EventReference` the client fetches over HTTP.
 */
export const MAX_MESSAGE_BYTES = 32 * 1024;

/** `resend_all=true`: every stored event first. OpenHands sends `String(true)`. */
const flag = z.pipe(
  z.enum(['true', 'false', '1', '0']),
  z.transform((v) => v === 'true' || v === '1'),
);

/**
 * The query of a stream URL.
 * - `resend_all=true`: every stored event first, then each new one. Without it (and without
 *   `after_seq`) only events committed after the connection opened.
 * - `after_seq=N`: resume after the last `seq` the client saw (wins over `resend_all`): no gap, no duplicate.
 * - `session_api_key`: the conversation-scoped key (`acsc.`...) of THIS conversation (what the UI sends).
 * - `ticket`: a single-use ticket from `POST /api/v1/app-conversations/{conversation_id}/stream-tickets`.
 * Never a user API key (`acs_...`): URLs end up in logs and histories; it is refused.
 */
export const streamQuerySchema = z.object({
  resend_all: z.optional(flag),
  after_seq: z.optional(afterSeqParam),
  session_api_key: z.optional(z.string().check(z.maxLength(512))),
  ticket: z.optional(z.string().check(z.maxLength(256))),
  /** The agent server's replay choice: `all` (as `resend_all=true`) or `since` with `after_timestamp` (resend-since.ts). */
  resend_mode: z.optional(z.enum(['all', 'since'])),
  after_timestamp: z.optional(
    z.string().check(
      z.maxLength(64),
      z.refine((t) => !Number.isNaN(Date.parse(t)), 'after_timestamp must be an ISO 8601 date-time'),
    ),
  ),
});
export type StreamQuery = z.output<typeof streamQuerySchema>;

/** Where a connection starts: after `after_seq`, else after 0 with `resend_all`, else after the committed end now. */
export const startAfter = (q: StreamQuery, committedEnd: number): number =>
  q.after_seq ?? (q.resend_all || q.resend_mode === 'all' ? 0 : committedEnd);

/** One stored event as a message: the V1 event as stored, with its sequence number (set by the server). */
export type EventMessage = AgentEventEnvelope & { seq: number };

/**
 * What is sent instead of an event whose message would exceed `MAX_MESSAGE_BYTES`. It keeps the
 * event's `id`, `timestamp`, `source` and `seq` (so a client orders, counts and resumes as for any
 * event); `href` is the events search route, relative to the API's base URL, that returns exactly
 * this event (`after_seq=seq-1&limit=1`), read with the client's usual credentials (cookie or the
 * conversation's `session_api_key` in `X-Session-API-Key`).
 */
export interface EventReference {
  kind: 'EventReference';
  id: string;
  timestamp: string;
  source: AgentEventEnvelope['source'];
  seq: number;
  event_kind: string;
  /** Size of the full event message in bytes. */
  bytes: number;
  href: string;
}

/** The HTTP path returning the one event numbered `seq` of a conversation. */
export const eventHref = (conversationId: string, seq: number) =>
  `/api/v1/events/search?conversation_id__eq=${conversationId}&after_seq=${seq - 1}&limit=1`;

/**
 * The message text for event `seq`: the event with its `seq` (a `seq` the agent put in the event
 * is replaced: the server's number is the one that orders), or its reference when too large (or
 * when the agent itself called it an `EventReference`). Every `href` the server sends is relative
 * and starts with `/api/v1/events/search?`: clients resolve it against the API's base URL only.
 */
export function streamMessage(conversationId: string, seq: number, event: AgentEventEnvelope): string {
  const full = JSON.stringify({ ...event, seq } satisfies EventMessage);
  const bytes = Buffer.byteLength(full);
  // An event the agent named `EventReference` could carry an `href` of its choosing, which a client
  // would fetch with its credentials: it too goes out as a reference the server writes.
  if (bytes <= MAX_MESSAGE_BYTES && event.kind !== 'EventReference') return full;
  const ref: EventReference = {
    kind: 'EventReference',
    id: event.id,
    timestamp: event.timestamp,
    source: event.source,
    seq,
    event_kind: event.kind,
    bytes,
    href: eventHref(conversationId, seq),
  };
  return JSON.stringify(ref);
}

/**
 * Close codes (RFC 6455 private range 4000-4999 mirror HTTP statuses) with a reason a person can
 * read. A refused connection is accepted and then closed with one of these, because a browser sees
 * nothing of a refused upgrade (on AWS, `$connect` can only answer a status: the client sees a failed handshake).
 */
export const CLOSE = {
  /** Normal closure (the server shuts down gracefully: 1001). */
  normal: 1000,
  goingAway: 1001,
  /** A client message that is not a user message (see client-messages.ts). */
  invalidMessage: 1007,
  internalError: 1011,
  /** A first-message auth that failed or never came (first-message-auth.ts; the agent server's code). */
  authFailed: 4001,
  badRequest: 4400,
  unauthorized: 4401,
  forbidden: 4403,
  notFound: 4404,
  /** The client answered no ping within the idle window. */
  idle: 4408,
} as const;
