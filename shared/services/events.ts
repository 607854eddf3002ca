import { EventService } from '#shared/events/service.ts';
import { defineService } from '#shared/services.ts';
import { cursors } from '#shared/services/cursors.ts';

export const events = defineService(
  { adapters: ['eventStore', 'conversationStore'], uses: [cursors] },
  (c) => new EventService(c.adapter('eventStore'), c.adapter('conversationStore'), c.use(cursors)),
);
