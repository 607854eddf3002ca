import { streamTickets } from '#shared/services/stream-tickets.ts';
import { createStreamTicket } from '#shared/stream/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { streamTicketStore } from '#shared/wiring/aws/stream.ts';

export const handler = awsRoute(createStreamTicket, { conversationStore, streamTicketStore }, { streamTickets });
