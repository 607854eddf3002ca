import { defineOperation } from '#shared/http/operation.ts';

/** The stream's one HTTP route: a single-use ticket that opens the caller's conversation's stream. */
export const createStreamTicket = defineOperation('createStreamTicket', ({ userId, params }, { streamTickets }) => streamTickets.issue(userId, params.conversation_id));
