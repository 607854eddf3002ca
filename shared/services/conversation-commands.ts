import { ConversationCommands } from '#shared/conversations/commands.ts';
import { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import { defineService } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { sandboxQueue } from '#shared/services/sandbox-queue.ts';

/** Commands to a conversation's sandbox (V1 API, agent-server routes, the stream) and its key's revocation. */
export const conversationCommands = defineService(
  { adapters: ['conversationStore'], uses: [sandboxQueue, conversationKeys] },
  (c) =>
    new ConversationCommands({
      conversations: c.adapter('conversationStore'),
      sandboxes: c.use(sandboxQueue),
      keys: c.use(conversationKeys),
      versioned: new VersionedConversationUpdate(c.adapter('conversationStore')),
    }),
);
