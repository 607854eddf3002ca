import { reportConversation } from '#shared/conversations/bridge-operations.ts';
import { conversationBridge } from '#shared/services/conversation-bridge.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore, startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(
  reportConversation,
  { conversationStore, startTaskStore, sandboxStore },
  { sandboxBridge, conversationBridge },
);
