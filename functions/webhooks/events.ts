import { postEvents } from '#shared/conversations/webhook-operations.ts';
import { awsRoute, conversationStore, eventStore, sandboxStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(postEvents, { conversationStore, eventStore, sandboxStore });
