import { reportConversation } from '#shared/conversations/webhook-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore, startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(reportConversation, { conversationStore, startTaskStore, sandboxStore });
