import { ConversationHousekeeping } from '#shared/conversations/sweep.ts';
import { defineService } from '#shared/services.ts';
import { sandboxQueue } from '#shared/services/sandbox-queue.ts';

export const conversationHousekeeping = defineService(
  { adapters: ['startTaskStore'], uses: [sandboxQueue] },
  (c) => new ConversationHousekeeping(c.adapter('startTaskStore'), c.use(sandboxQueue)),
);
