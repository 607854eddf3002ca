import { canvasSearchConversationEvents } from '#shared/events/agent-server-operations.ts';
import { events } from '#shared/services/events.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(canvasSearchConversationEvents, { events });
