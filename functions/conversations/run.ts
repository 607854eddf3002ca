import { runConversation } from '#shared/conversations/operations.ts';
import { awsRoute, conversationStore, sandboxConfig, sandboxStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(runConversation, { conversationStore, sandboxStore, sandboxConfig });
