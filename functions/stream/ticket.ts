import { streamTickets } from '#shared/services/stream-tickets.ts';
import { createStreamTicket } from '#shared/stream/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(createStreamTicket, { streamTickets });
