import { ConversationHousekeeping } from '#shared/conversations/sweep.ts';
import { defineService } from '#shared/services.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';

export const conversationHousekeeping = defineService(
  { adapters: ['startTaskStore'], uses: [sandboxes] },
  (c) => new ConversationHousekeeping(c.adapter('startTaskStore'), c.use(sandboxes)),
);
