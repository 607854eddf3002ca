import { countEvents } from '#shared/events/operations.ts';
import { events } from '#shared/services/events.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';

export const handler = awsRoute(countEvents, { eventStore, conversationStore }, { events });
