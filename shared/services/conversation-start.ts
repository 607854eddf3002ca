import { ConversationStart } from '#shared/conversations/start.ts';
import { defineService } from '#shared/services.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { settings } from '#shared/services/settings.ts';

/** The conversation start: the V1 API's (`startWithSettings`), and the one the legacy create calls. */
export const conversationStarts = defineService(
  { adapters: ['conversationStore', 'startTaskStore', 'plans'], uses: [settings, sandboxes, platformLlms] },
  (c) =>
    new ConversationStart(
      c.adapter('conversationStore'),
      c.adapter('startTaskStore'),
      c.use(settings),
      c.use(sandboxes),
      // Read by starts only (their functions declare the plans capability).
      () => c.adapters.plans,
      undefined,
      c.use(platformLlms),
    ),
);
