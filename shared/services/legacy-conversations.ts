import { LegacyConversationService } from '#shared/conversations/legacy-service.ts';
import { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { conversationStart } from '#shared/services/conversation-start.ts';
import { cursors } from '#shared/services/cursors.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { settings } from '#shared/services/settings.ts';

/** The legacy `/api/conversations` routes' conversations. */
export const legacyConversations: ServiceFactory<LegacyConversationService> = (c) =>
  new LegacyConversationService(
    c.adapter('conversationStore'),
    c.adapter('startTaskStore'),
    c.use(settings),
    c.use(sandboxes),
    c.use(cursors),
    c.use(conversationKeys),
    new VersionedConversationUpdate(c.adapter('conversationStore')),
    c.use(conversationStart),
    c.use(platformLlms),
  );
