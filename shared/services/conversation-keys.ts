import { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import { conversationKeyVersion } from '#shared/conversations/owned.ts';
import { defineService } from '#shared/services.ts';

export const conversationKeys = defineService(
  { adapters: ['conversationStore', 'conversationKeySecret'] },
  (c) =>
    new ConversationKeys(
      () => c.adapters.conversationKeySecret(),
      conversationKeyVersion(c.adapter('conversationStore')),
    ),
);
