import { ConversationHousekeeping } from '#shared/conversations/sweep.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { sandboxControl } from '#shared/services/sandbox-control.ts';

export const conversationHousekeeping: ServiceFactory<ConversationHousekeeping> = (c) =>
  new ConversationHousekeeping(c.adapter('startTaskStore'), sandboxControl(c));
