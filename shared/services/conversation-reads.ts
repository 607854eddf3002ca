import { ConversationReads } from '#shared/conversations/reads.ts';
import { defineService } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { cursors } from '#shared/services/cursors.ts';
import { sandboxQueue } from '#shared/services/sandbox-queue.ts';

/** The V1 API's and the agent-server routes' reads of conversations and their start tasks. */
export const conversationReads = defineService(
  { adapters: ['conversationStore', 'startTaskStore'], uses: [sandboxQueue, cursors, conversationKeys] },
  (c) =>
    new ConversationReads({
      conversations: c.adapter('conversationStore'),
      tasks: c.adapter('startTaskStore'),
      sandboxes: c.use(sandboxQueue),
      cursors: c.use(cursors),
      keys: c.use(conversationKeys),
    }),
);
