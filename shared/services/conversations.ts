import { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import { ConversationService } from '#shared/conversations/service.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { conversationStart } from '#shared/services/conversation-start.ts';
import { cursors } from '#shared/services/cursors.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { settings } from '#shared/services/settings.ts';

/** The V1 API's conversations (and the agent-server routes', the stream relay's). */
export const conversations: ServiceFactory<ConversationService> = (c) =>
  new ConversationService(
    c.adapter('conversationStore'),
    c.adapter('startTaskStore'),
    c.use(settings),
    c.use(sandboxes),
    c.use(cursors),
    c.use(conversationKeys),
    new VersionedConversationUpdate(c.adapter('conversationStore')),
    c.use(conversationStart),
  );
