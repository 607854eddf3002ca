import { searchEvents } from '#shared/events/operations.ts';
import { events } from '#shared/services/events.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(searchEvents, { events });
