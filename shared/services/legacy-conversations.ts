import { LegacyConversationService } from '#shared/conversations/legacy-service.ts';
import { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import { defineService } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { conversationStarts } from '#shared/services/conversation-start.ts';
import { cursors } from '#shared/services/cursors.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { sandboxQueue } from '#shared/services/sandbox-queue.ts';
import { settings } from '#shared/services/settings.ts';

/** The legacy `/api/conversations` routes' conversations. */
export const legacyConversations = defineService(
  {
    adapters: ['conversationStore', 'startTaskStore'],
    uses: [settings, sandboxQueue, cursors, conversationKeys, conversationStarts, platformLlms],
  },
  (c) =>
    new LegacyConversationService(
      {
        conversations: c.adapter('conversationStore'),
        tasks: c.adapter('startTaskStore'),
        settings: c.use(settings),
        sandboxes: c.use(sandboxQueue),
        cursors: c.use(cursors),
        keys: c.use(conversationKeys),
        versioned: new VersionedConversationUpdate(c.adapter('conversationStore')),
        starts: c.use(conversationStarts),
      },
      c.use(platformLlms),
    ),
);
