import { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import { conversationKeyVersion } from '#shared/conversations/owned.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const conversationKeys: ServiceFactory<ConversationKeys> = (c) =>
  new ConversationKeys(
    () => c.adapters.conversationKeySecret(),
    conversationKeyVersion(c.adapter('conversationStore')),
  );
