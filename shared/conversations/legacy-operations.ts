import * as z from '#shared/zod.ts';
import {
  conversationInfoSchema,
  toConversationInfo,
  wantsAgentServerShape,
} from '#shared/conversations/agent-server.ts';
import {
  conversationParams,
  legacyConversationPageSchema,
  legacyConversationSchema,
  legacyCreateResponseSchema,
  legacyCreateSchema,
  legacyListQuery,
  legacyUpdateSchema,
} from '#shared/conversations/model.ts';
import { invalidField } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { repeated } from '#shared/http/query.ts';
import { tenantOf } from '#shared/plans/limits.ts';
import { conversationIdSchema } from '#shared/protocol.ts';

/**
 * The legacy (V0) conversation routes the OpenHands web UI of late 2025 and agent-server clients call,
 * apart from the V1 ones: a V1 route's bundle carries none of these (nor the agent server's shapes).
 */
export const legacyCreateConversation = defineOperation(
  'legacyCreateConversation',
  () => ({
    body: legacyCreateSchema,
    response: legacyCreateResponseSchema,
    errors: [402, 404, 409],
    example: { initial_user_msg: 'Fix the failing test in test/app.test.ts', repository: 'octo-org/hello-world' },
  }),
  ({ userId, auth, body, baseUrl }, { legacyConversations }) =>
    legacyConversations.create(userId, body, baseUrl, tenantOf(userId, auth)),
);

export const legacyListConversations = defineOperation(
  'legacyListConversations',
  // One path, two shapes: with `ids` (the agent server's batch get) an ordered array of its
  // ConversationInfo, null for an id not the caller's (for a conversation key: any but its own).
  () => ({
    query: z.extend(z.unlazy(legacyListQuery), { ids: repeated('ids', conversationIdSchema) }),
    response: z.union([legacyConversationPageSchema, z.array(z.nullable(conversationInfoSchema))]),
  }),
  async ({ userId, auth, query: { ids, ...query }, baseUrl }, { legacyConversations }) => {
    if (auth.via === 'conversation' && !ids.length)
      throw invalidField(['query', 'ids'], "a conversation key lists only by ids (the agent server's batch get)");
    if (!ids.length) return legacyConversations.list(userId, query, baseUrl);
    const mine = await legacyConversations.ownedMany(userId, ids);
    return mine.map((c) =>
      c && (auth.via !== 'conversation' || c.id === auth.conversationId) ? toConversationInfo(c) : null,
    );
  },
);

export const legacyGetConversation = defineOperation(
  'legacyGetConversation',
  // One path, two shapes: a conversation key or a client naming itself (X-OpenHands-Client) gets the agent server's ConversationInfo.
  () => ({ params: conversationParams, response: z.union([legacyConversationSchema, conversationInfoSchema]) }),
  async ({ userId, params, baseUrl, auth, headers }, { legacyConversations }) =>
    wantsAgentServerShape(auth?.via, headers)
      ? toConversationInfo(await legacyConversations.owned(userId, params.conversation_id))
      : legacyConversations.get(userId, params.conversation_id, baseUrl),
);

export const legacyUpdateConversation = defineOperation(
  'legacyUpdateConversation',
  () => ({ params: conversationParams, body: legacyUpdateSchema, response: z.literal(true) }),
  ({ userId, params, body }, { legacyConversations }) =>
    legacyConversations.rename(userId, params.conversation_id, body.title),
);

export const legacyConversationConfig = defineOperation(
  'legacyConversationConfig',
  () => ({
    params: conversationParams,
    response: z.object({ runtime_id: z.nullable(z.string()), session_id: z.string() }),
  }),
  ({ userId, params }, { legacyConversations }) => legacyConversations.config(userId, params.conversation_id),
);

export const legacyDeleteConversation = defineOperation(
  'legacyDeleteConversation',
  () => ({ params: conversationParams, response: z.literal(true) }),
  ({ userId, params }, { legacyConversations }) => legacyConversations.remove(userId, params.conversation_id),
);
