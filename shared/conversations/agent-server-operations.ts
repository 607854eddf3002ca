import * as z from '#shared/zod.ts';
import {
  AGENT_SERVER_COMPAT_VERSION,
  type ConversationInfo,
  conversationInfoSchema,
  toConversationInfo,
} from '#shared/conversations/agent-server.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { pageId, pageLimit } from '#shared/http/query.ts';
import { conversationIdSchema, executionStatusSchema } from '#shared/protocol.ts';
import type { Services } from '#shared/services.ts';

/** The agent server's service routes and conversation actions at a conversation's `conversation_url` (docs/openhands-clients.md). */

const startedAt = Date.now();

export const agentServerAlive = defineOperation(
  'agentServerAlive',
  () => ({ response: z.object({ status: z.literal('ok') }) }),
  async () => ({ status: 'ok' as const }),
);

export const agentServerReady = defineOperation(
  'agentServerReady',
  () => ({ response: z.object({ status: z.literal('ready') }) }),
  async () => ({ status: 'ready' as const }),
);

export const agentServerInfo = defineOperation(
  'agentServerInfo',
  () => ({
    response: z.object({
      uptime: z.number(),
      idle_time: z.number(),
      title: z.string(),
      version: z.string(),
      sdk_version: z.string(),
      tools_version: z.string(),
      workspace_version: z.string(),
    }),
  }),
  async () => ({
    // Of this function instance (a Lambda's life, a process's locally): nothing depends on it.
    uptime: Math.floor((Date.now() - startedAt) / 1000),
    idle_time: 0,
    title: 'Agent Conversation Service (OpenHands agent-server compatible)',
    version: AGENT_SERVER_COMPAT_VERSION,
    sdk_version: AGENT_SERVER_COMPAT_VERSION,
    tools_version: AGENT_SERVER_COMPAT_VERSION,
    workspace_version: AGENT_SERVER_COMPAT_VERSION,
  }),
);

export const agentServerInterrupt = defineOperation(
  'agentServerInterrupt',
  () => ({ params: z.object({ conversation_id: conversationIdSchema }), response: z.object({ success: z.boolean() }) }),
  ({ userId, params }, { conversationCommands }) =>
    conversationCommands.command(userId, params.conversation_id, (id) => ({
      type: 'pause_conversation',
      conversation_id: id,
    })),
);

/** The agent server's conversation orders; ours are listed newest created first, and a page is sorted as asked. */
const conversationSortOrders = ['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC'] as const;
const agentServerConversationQuery = z.lazy(() =>
  z.object({
    page_id: pageId,
    limit: pageLimit,
    status: z.optional(executionStatusSchema),
    sort_order: z._default(z.enum(conversationSortOrders), 'CREATED_AT_DESC'),
  }),
);

function sortPage(items: ConversationInfo[], order: (typeof conversationSortOrders)[number]): ConversationInfo[] {
  const field = order.startsWith('CREATED') ? 'created_at' : 'updated_at';
  const sign = order.endsWith('_DESC') ? -1 : 1;
  return items.sort((a, b) => sign * a[field].localeCompare(b[field]));
}

/**
 * `GET /api/conversations/search` as the agent server answers it (Agent Canvas's local mode lists
 * conversations with it): a conversation key sees its own conversation only; a user's key their
 * conversations, a page at a time, newest created first across pages. `status` filters and
 * `sort_order` sorts within each page (a filtered page may come back shorter).
 */
export const agentServerSearchConversations = defineOperation(
  'agentServerSearchConversations',
  () => ({
    query: agentServerConversationQuery,
    response: z.object({ items: z.array(conversationInfoSchema), next_page_id: z.nullable(z.string()) }),
  }),
  async ({ userId, auth, query }, { conversationReads }) => {
    const page =
      auth.via === 'conversation'
        ? { items: await ownOnly(conversationReads, userId, auth.conversationId!), next_page_id: null }
        : await conversationReads.recordPage(userId, query.limit, query.page_id);
    const items = page.items
      .map(toConversationInfo)
      .filter((c) => !query.status || c.execution_status === query.status);
    return { items: sortPage(items, query.sort_order), next_page_id: page.next_page_id };
  },
);

/** `GET /api/conversations/count`: a conversation key counts its own conversation (0 or 1); `status` as the agent server filters. */
export const agentServerCountConversations = defineOperation(
  'agentServerCountConversations',
  () => ({
    query: z.object({ status: z.optional(executionStatusSchema) }),
    response: z.number().check(z.int()),
  }),
  async ({ userId, auth, query }, { conversationReads }) => {
    if (auth.via === 'conversation')
      return (await ownOnly(conversationReads, userId, auth.conversationId!)).filter(
        (c) => !query.status || (c.execution_status ?? 'idle') === query.status,
      ).length;
    if (!query.status) return conversationReads.countAll(userId);
    // A status is a field of each record: counted page by page.
    let count = 0;
    let pageId: string | undefined;
    do {
      const page = await conversationReads.recordPage(userId, 100, pageId);
      count += page.items.filter((c) => (c.execution_status ?? 'idle') === query.status).length;
      pageId = page.next_page_id ?? undefined;
    } while (pageId);
    return count;
  },
);

/** The key's own conversation record (none once it was deleted). */
const ownOnly = async (conversations: Services['conversationReads'], userId: string, conversationId: string) =>
  (await conversations.ownedMany(userId, [conversationId])).filter((c) => c !== null);
