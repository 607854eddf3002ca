import { searchEvents } from '#shared/events/operations.ts';
import { awsRoute, conversationStore, cursorKey, eventStore, sealer } from '#shared/wiring/aws.ts';

export const handler = awsRoute(searchEvents, { eventStore, conversationStore, sealer, cursorKey });
