import { legacyDeleteConversation } from '#shared/conversations/legacy-operations.ts';
import { legacyConversations } from '#shared/services/legacy-conversations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(
  legacyDeleteConversation,
  { conversationStore, sandboxStore, commandPush, sandboxConfig },
  { legacyConversations },
);
