import { countEvents } from '#shared/events/operations.ts';
import { awsRoute, conversationStore, eventStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(countEvents, { eventStore, conversationStore });
