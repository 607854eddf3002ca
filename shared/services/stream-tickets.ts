import type { ServiceFactory } from '#shared/services.ts';
import { StreamTickets } from '#shared/stream/tickets.ts';

export const streamTickets: ServiceFactory<StreamTickets> = (c) =>
  new StreamTickets(c.adapter('streamTicketStore'), c.adapter('conversationStore'));
