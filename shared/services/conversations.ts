import { ConversationService } from '#shared/conversations/service.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { conversationDeps } from '#shared/services/conversation-deps.ts';

/** The V1 API's conversations (and the agent-server routes', the stream relay's). */
export const conversations: ServiceFactory<ConversationService> = (c) => new ConversationService(conversationDeps(c));
