import { reportConversation } from '#shared/conversations/webhook-operations.ts';
import { awsRoute, conversationStore, sandboxStore, startTaskStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(reportConversation, { conversationStore, startTaskStore, sandboxStore });
