import * as z from '#shared/zod.ts';
import { conversationParams } from '#shared/conversations/model.ts';
import { defineOperation } from '#shared/http/operation.ts';

/** The stream's one HTTP route: a single-use ticket that opens the caller's conversation's stream. */
export const createStreamTicket = defineOperation(
  'createStreamTicket',
  () => ({ params: conversationParams, response: z.object({ ticket: z.string(), expires_at: z.string() }) }),
  ({ userId, params }, { streamTickets }) => streamTickets.issue(userId, params.conversation_id),
);
