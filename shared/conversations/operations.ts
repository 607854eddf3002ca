import * as z from '#shared/zod.ts';
import {
  conversationCountQuery,
  conversationListQuery,
  conversationParams,
  conversationSchema,
  conversationSearchQuery,
  initialMessageSchema,
  startRequestSchema,
  startTaskSchema,
  startTaskSearchQuery,
} from '#shared/conversations/model.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { repeated } from '#shared/http/query.ts';
import { tenantOf } from '#shared/plans/limits.ts';
import { conversationIdSchema } from '#shared/protocol.ts';

/** The user's conversation routes, V1 (the legacy ones are in legacy-operations.ts, the sandbox's own in bridge-operations.ts). */
export const startConversation = defineOperation(
  'startConversation',
  () => ({
    body: startRequestSchema,
    response: startTaskSchema,
    errors: [402, 404, 409],
    example: {
      initial_message: { content: [{ type: 'text', text: 'Write a README for this project' }] },
      selected_repository: 'octo-org/hello-world',
      git_provider: 'github',
      selected_branch: 'main',
    },
  }),
  ({ userId, auth, body, baseUrl }, { conversationStarts }) =>
    conversationStarts.startWithSettings(userId, body, baseUrl, tenantOf(userId, auth)),
);

const conversationPage = () => z.object({ items: z.array(conversationSchema), next_page_id: z.nullable(z.string()) });

export const listConversations = defineOperation(
  'listConversations',
  // With `ids`: those conversations in request order, null for an unknown one; without: a page.
  () => ({
    query: conversationListQuery,
    response: z.union([z.array(z.nullable(conversationSchema)), conversationPage()]),
  }),
  ({ userId, query: { ids, ...search }, baseUrl }, { conversationReads }) =>
    ids.length ? conversationReads.getMany(userId, ids, baseUrl) : conversationReads.search(userId, search, baseUrl),
);

export const searchConversations = defineOperation(
  'searchConversations',
  () => ({
    query: conversationSearchQuery,
    response: conversationPage(),
  }),
  ({ userId, query, baseUrl }, { conversationReads }) => conversationReads.search(userId, query, baseUrl),
);

export const countConversations = defineOperation(
  'countConversations',
  () => ({ query: conversationCountQuery, response: z.number().check(z.int()) }),
  ({ userId, query }, { conversationReads }) => conversationReads.count(userId, query),
);

export const searchStartTasks = defineOperation(
  'searchStartTasks',
  () => ({
    query: startTaskSearchQuery,
    response: z.object({ items: z.array(startTaskSchema), next_page_id: z.nullable(z.string()) }),
  }),
  ({ userId, query, baseUrl }, { conversationReads }) => conversationReads.searchTasks(userId, query, baseUrl),
);

export const getStartTasks = defineOperation(
  'getStartTasks',
  () => ({ query: z.object({ ids: repeated('ids') }), response: z.array(z.nullable(startTaskSchema)) }),
  ({ userId, query, baseUrl }, { conversationReads }) => conversationReads.getTasks(userId, query.ids, baseUrl),
);

// Talking to a running conversation: each becomes a command to its sandbox.
export const sendMessage = defineOperation(
  'sendMessage',
  () => ({
    params: z.object({ conversation_id: conversationIdSchema }),
    body: initialMessageSchema,
    response: z.object({ success: z.boolean() }),
    errors: [409],
    example: { role: 'user', content: [{ type: 'text', text: 'Now add a test for it' }], run: true },
  }),
  ({ userId, params, body }, { conversationCommands }) =>
    conversationCommands.command(userId, params.conversation_id, (id) => ({
      type: 'send_message',
      conversation_id: id,
      message: body,
    })),
);

export const pauseConversation = defineOperation(
  'pauseConversation',
  () => ({
    params: z.object({ conversation_id: conversationIdSchema }),
    response: z.object({ success: z.boolean() }),
    errors: [409],
  }),
  ({ userId, params }, { conversationCommands }) =>
    conversationCommands.command(userId, params.conversation_id, (id) => ({
      type: 'pause_conversation',
      conversation_id: id,
    })),
);

export const runConversation = defineOperation(
  'runConversation',
  () => ({
    params: z.object({ conversation_id: conversationIdSchema }),
    response: z.object({ success: z.boolean() }),
    errors: [409],
  }),
  ({ userId, params }, { conversationCommands }) =>
    conversationCommands.command(userId, params.conversation_id, (id) => ({
      type: 'run_conversation',
      conversation_id: id,
    })),
);

export const respondToConfirmation = defineOperation(
  'respondToConfirmation',
  () => ({
    params: z.object({ conversation_id: conversationIdSchema }),
    body: z.object({ accept: z.boolean(), reason: z.optional(z.nullable(z.string().check(z.maxLength(4096)))) }),
    response: z.object({ success: z.boolean() }),
    errors: [409],
  }),
  ({ userId, params, body }, { conversationCommands }) =>
    conversationCommands.command(userId, params.conversation_id, (id) => ({
      type: 'respond_to_confirmation',
      conversation_id: id,
      accept: body.accept,
      reason: body.reason ?? null,
    })),
);

export const revokeConversationKey = defineOperation(
  'revokeConversationKey',
  () => ({ params: conversationParams, response: z.object({ session_api_key: z.string() }) }),
  ({ userId, params }, { conversationCommands }) => conversationCommands.revokeKey(userId, params.conversation_id),
);
