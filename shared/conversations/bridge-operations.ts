import * as z from '#shared/zod.ts';
import { defineOperation } from '#shared/http/operation.ts';
import {
  conversationIdSchema,
  conversationReportSchema,
  eventPostQuery,
  eventSchema,
  sandboxIdSchema,
} from '#shared/protocol.ts';

/** The bridge routes a sandbox calls with its own key: events, start progress and status, its start configuration. */
export const postEvents = defineOperation(
  'postEvents',
  () => ({
    params: z.object({ sandbox_id: sandboxIdSchema, conversation_id: conversationIdSchema }),
    query: eventPostQuery,
    body: z.array(eventSchema).check(z.maxLength(100)),
    response: z.object({ success: z.boolean(), added: z.number().check(z.int()) }),
  }),
  ({ params, query, sandbox, body }, { conversationBridge }) =>
    conversationBridge.postEvents(sandbox, params.conversation_id, query.first_seq, body),
);

export const reportConversation = defineOperation(
  'reportConversation',
  () => ({
    params: z.object({ sandbox_id: sandboxIdSchema }),
    body: conversationReportSchema,
    response: z.object({ success: z.boolean() }),
  }),
  ({ sandbox, body }, { conversationBridge }) => conversationBridge.report(sandbox, body),
);

export const getStartConfig = defineOperation(
  'getStartConfig',
  () => ({ params: z.object({ sandbox_id: sandboxIdSchema, conversation_id: conversationIdSchema }) }),
  ({ params, sandbox }, { conversationBridge }) => conversationBridge.startConfig(sandbox, params.conversation_id),
);
