import { LegacyConversationService } from '#shared/conversations/legacy-service.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { conversationDeps } from '#shared/services/conversation-deps.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';

/** The legacy `/api/conversations` routes' conversations. */
export const legacyConversations: ServiceFactory<LegacyConversationService> = (c) =>
  new LegacyConversationService(conversationDeps(c), c.use(platformLlms));
