import { ConversationStart } from '#shared/conversations/start.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { platformLlms } from '#shared/services/platform-llms.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { settings } from '#shared/services/settings.ts';

/** The start both conversation audiences share (built on first use, no service name of its own: operations never read it). */
export const conversationStart: ServiceFactory<ConversationStart> = (c) =>
  new ConversationStart(
    c.adapter('conversationStore'),
    c.adapter('startTaskStore'),
    c.use(settings),
    c.use(sandboxes),
    // Read by starts only (their functions declare the plans capability).
    () => c.adapters.plans,
    undefined,
    c.use(platformLlms),
  );
