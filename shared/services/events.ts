import { EventService } from '#shared/events/service.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { cursors } from '#shared/services/cursors.ts';

export const events: ServiceFactory<EventService> = (c) =>
  new EventService(c.adapter('eventStore'), c.adapter('conversationStore'), c.use(cursors));
