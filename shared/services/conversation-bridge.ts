import { ConversationBridge } from '#shared/conversations/bridge.ts';
import { ConversationRecords } from '#shared/conversations/records.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { sandboxControl } from '#shared/services/sandbox-control.ts';
import { settings } from '#shared/services/settings.ts';

export const conversationBridge: ServiceFactory<ConversationBridge> = (c) =>
  new ConversationBridge(
    c.adapter('conversationStore'),
    c.adapter('startTaskStore'),
    c.adapter('eventStore'),
    c.use(settings),
    sandboxControl(c),
    new ConversationRecords(c.adapter('conversationStore')),
    c.adapter('eventFeed'),
    undefined,
    // Read by the ingest only (the plans adapter is its entry's): its rate and cap.
    (name) => c.adapters.plans.plan(name),
  );
