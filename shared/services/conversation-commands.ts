import { ConversationCommands } from '#shared/conversations/commands.ts';
import { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import { defineService } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';

/** Commands to a conversation's sandbox (V1 API, agent-server routes, the stream) and its key's revocation. */
export const conversationCommands = defineService(
  { adapters: ['conversationStore'], uses: [sandboxes, conversationKeys] },
  (c) =>
    new ConversationCommands({
      conversations: c.adapter('conversationStore'),
      sandboxes: c.use(sandboxes),
      keys: c.use(conversationKeys),
      versioned: new VersionedConversationUpdate(c.adapter('conversationStore')),
    }),
);
