import { ConversationHousekeeping } from '#shared/conversations/sweep.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';

export const conversationHousekeeping: ServiceFactory<ConversationHousekeeping> = (c) =>
  new ConversationHousekeeping(c.adapter('startTaskStore'), c.use(sandboxes));
