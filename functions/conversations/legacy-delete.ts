import { legacyDeleteConversation } from '#shared/conversations/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(legacyDeleteConversation, { conversationStore, sandboxStore, sandboxConfig });
