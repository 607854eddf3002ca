import * as z from '#shared/zod.ts';
import { eventPageSchema, sortOrder } from '#shared/events/model.ts';
import { dateTimeFilter, pageId, pageLimit } from '#shared/http/query.ts';
import { notFound } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { conversationIdSchema } from '#shared/protocol.ts';
import type { EventService } from '#shared/events/service.ts';

/*
 * A conversation's events at the agent server's paths (`/api/conversations/{id}/events/...`), for
 * clients that treat `conversation_url` as an agent server: the same reads as `/api/v1/events/*`,
 * with the agent server's filter names. `source` and `body` filter within each page (a page may come
 * back shorter; `next_page_id` still continues); the count takes `kind` and the timestamps only.
 */

const params = z.lazy(() => z.object({ conversation_id: conversationIdSchema }));
const filters = {
  kind: z.optional(z.string().check(z.maxLength(64))),
  timestamp__gte: dateTimeFilter,
  timestamp__lt: dateTimeFilter,
};
const searchQuery = z.lazy(() =>
  z.object({
    ...filters,
    source: z.optional(z.enum(['agent', 'user', 'environment', 'hook'])),
    body: z.optional(z.string().check(z.maxLength(256))),
    sort_order: sortOrder,
    page_id: pageId,
    limit: pageLimit,
  }),
);
const countQuery = z.lazy(() =>
  z.object({
    ...filters,
    source: z.optional(z.never('source is not supported by the count here (use events/search)')),
    body: z.optional(z.never('body is not supported by the count here (use events/search)')),
  }),
);

/** How far back a lookup by event id or the final response reads (newest first). */
const LOOKBACK_PAGES = 10;

/** Reads the conversation's events newest first, at most LOOKBACK_PAGES pages, until `pick` returns something. */
async function newestFirst<T>(
  events: EventService,
  userId: string,
  conversationId: string,
  pick: (event: Record<string, unknown>) => T | undefined,
): Promise<T | undefined> {
  let page: string | undefined;
  for (let i = 0; i < LOOKBACK_PAGES; i++) {
    const got = await events.search(userId, {
      conversation_id__eq: conversationId,
      sort_order: 'TIMESTAMP_DESC',
      page_id: page,
      limit: 100,
    } as Parameters<EventService['search']>[1]);
    for (const e of got.items) {
      const found = pick(e as unknown as Record<string, unknown>);
      if (found !== undefined) return found;
    }
    if (!got.next_page_id) return undefined;
    page = got.next_page_id;
  }
  return undefined;
}

/** The agent server's event search over our event pages: `source` and `body` filter within each page. */
async function searchFiltered(
  events: EventService,
  userId: string,
  conversationId: string,
  query: z.output<typeof searchQuery>,
) {
  const page = await events.search(userId, {
    conversation_id__eq: conversationId,
    kind__eq: query.kind,
    timestamp__gte: query.timestamp__gte,
    timestamp__lt: query.timestamp__lt,
    sort_order: query.sort_order,
    page_id: query.page_id,
    limit: query.limit,
  } as Parameters<EventService['search']>[1]);
  const needle = query.body?.toLowerCase();
  const items = page.items.filter(
    (e) =>
      (query.source === undefined || e.source === query.source) &&
      (needle === undefined || JSON.stringify(e).toLowerCase().includes(needle)),
  );
  return { items, next_page_id: page.next_page_id };
}

export const agentServerSearchEvents = defineOperation(
  'agentServerSearchEvents',
  () => ({ params, query: searchQuery, response: eventPageSchema }),
  ({ userId, params, query }, { events }) => searchFiltered(events, userId, params.conversation_id, query),
);

/**
 * `GET /api/v1/conversation/{id}/events/search` (singular `conversation`): where Agent Canvas's cloud
 * mode reads a conversation's history, with the same filters.
 */
export const canvasSearchConversationEvents = defineOperation(
  'canvasSearchConversationEvents',
  () => ({ params, query: searchQuery, response: eventPageSchema }),
  ({ userId, params, query }, { events }) => searchFiltered(events, userId, params.conversation_id, query),
);

/**
 * `GET /api/v1/app-conversations/{id}/skills`: the skills loaded into the conversation's agent. Ours
 * loads none (no microagents or skill files), so the list is empty; a foreign id is still a 404.
 */
export const canvasConversationSkills = defineOperation(
  'canvasConversationSkills',
  () => ({ params, response: z.object({ skills: z.array(z.unknown()) }) }),
  async ({ userId, params }, { events }) => {
    await events.owned(userId, params.conversation_id);
    return { skills: [] };
  },
);

export const agentServerCountEvents = defineOperation(
  'agentServerCountEvents',
  () => ({ params, query: countQuery, response: z.number().check(z.int()) }),
  ({ userId, params, query }, { events }) =>
    events.count(userId, {
      conversation_id__eq: params.conversation_id,
      kind__eq: query.kind,
      timestamp__gte: query.timestamp__gte,
      timestamp__lt: query.timestamp__lt,
    } as Parameters<EventService['count']>[1]),
);

export const agentServerGetEvent = defineOperation(
  'agentServerGetEvent',
  () => ({
    params: z.object({
      conversation_id: conversationIdSchema,
      event_id: z.string().check(z.minLength(1), z.maxLength(128)),
    }),
    response: z.record(z.string(), z.unknown()),
  }),
  async ({ userId, params }, { events }) => {
    const found = await newestFirst(events, userId, params.conversation_id, (e) =>
      e.id === params.event_id ? e : undefined,
    );
    if (!found) throw notFound('Event not found');
    return found;
  },
);

/** The text of the agent's last answer: its `finish` message, or its last message to the user. */
function answerOf(e: Record<string, unknown>): string | undefined {
  if (e.source !== 'agent') return undefined;
  const action = e.action as { kind?: string; message?: unknown } | undefined;
  if (e.kind === 'ActionEvent' && action?.kind === 'FinishAction' && typeof action.message === 'string')
    return action.message;
  if (e.kind === 'ActionEvent' && e.tool_name === 'finish' && typeof action?.message === 'string')
    return action.message;
  const content = (e.llm_message as { content?: { type?: string; text?: string }[] } | undefined)?.content;
  if (e.kind === 'MessageEvent' && Array.isArray(content))
    return content
      .filter((c) => c.type === 'text' && typeof c.text === 'string')
      .map((c) => c.text)
      .join('');
  return undefined;
}

export const agentServerFinalResponse = defineOperation(
  'agentServerFinalResponse',
  () => ({ params, response: z.object({ response: z.string() }) }),
  async ({ userId, params }, { events }) => ({
    response: (await newestFirst(events, userId, params.conversation_id, answerOf)) ?? '',
  }),
);
