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
import { defineOperation } from '#shared/http/operation.ts';
import { tenantOf } from '#shared/plans/limits.ts';

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
  ({ userId, auth, body, baseUrl }, { conversations }) =>
    conversations.legacyCreate(userId, body, baseUrl, tenantOf(userId, auth)),
);

export const legacyListConversations = defineOperation(
  'legacyListConversations',
  () => ({ query: legacyListQuery, response: legacyConversationPageSchema }),
  ({ userId, query, baseUrl }, { conversations }) => conversations.legacyList(userId, query, baseUrl),
);

export const legacyGetConversation = defineOperation(
  'legacyGetConversation',
  // One path, two shapes: a conversation key or a client naming itself (X-OpenHands-Client) gets the agent server's ConversationInfo.
  () => ({ params: conversationParams, response: z.union([legacyConversationSchema, conversationInfoSchema]) }),
  async ({ userId, params, baseUrl, auth, headers }, { conversations }) =>
    wantsAgentServerShape(auth?.via, headers)
      ? toConversationInfo(await conversations.owned(userId, params.conversation_id))
      : conversations.legacyGet(userId, params.conversation_id, baseUrl),
);

export const legacyUpdateConversation = defineOperation(
  'legacyUpdateConversation',
  () => ({ params: conversationParams, body: legacyUpdateSchema, response: z.literal(true) }),
  ({ userId, params, body }, { conversations }) => conversations.rename(userId, params.conversation_id, body.title),
);

export const legacyConversationConfig = defineOperation(
  'legacyConversationConfig',
  () => ({
    params: conversationParams,
    response: z.object({ runtime_id: z.nullable(z.string()), session_id: z.string() }),
  }),
  ({ userId, params }, { conversations }) => conversations.runtimeConfig(userId, params.conversation_id),
);

export const legacyDeleteConversation = defineOperation(
  'legacyDeleteConversation',
  () => ({ params: conversationParams, response: z.literal(true) }),
  ({ userId, params }, { conversations }) => conversations.remove(userId, params.conversation_id),
);
