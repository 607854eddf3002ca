import { defineService } from '#shared/services.ts';
import { StreamTickets } from '#shared/stream/tickets.ts';

export const streamTickets = defineService(
  { adapters: ['streamTicketStore', 'conversationStore'] },
  (c) => new StreamTickets(c.adapter('streamTicketStore'), c.adapter('conversationStore')),
);
