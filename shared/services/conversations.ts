import { ConversationRecords } from '#shared/conversations/records.ts';
import { ConversationService } from '#shared/conversations/service.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { cursors } from '#shared/services/cursors.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { settings } from '#shared/services/settings.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';

export const conversations: ServiceFactory<ConversationService> = (c) =>
  new ConversationService(
    c.adapter('conversationStore'),
    c.adapter('startTaskStore'),
    c.use(settings),
    c.use(sandboxes),
    c.use(cursors),
    c.use(conversationKeys),
    new ConversationRecords(c.adapter('conversationStore')),
    // Read by starts only (their functions declare the plans capability).
    () => c.adapters.plans,
    undefined,
    c.use(platformLlms),
  );
