import { legacyListConversations } from '#shared/conversations/legacy-operations.ts';
import { legacyConversations } from '#shared/services/legacy-conversations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore, startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { conversationKeySecret, cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(
  legacyListConversations,
  { conversationStore, startTaskStore, sandboxStore, sealer, conversationKeySecret, cursorKey },
  { legacyConversations },
);
