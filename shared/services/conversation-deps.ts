import type { ConversationDeps } from '#shared/conversations/deps.ts';
import { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import type { ServiceContext } from '#shared/services.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { conversationStart } from '#shared/services/conversation-start.ts';
import { cursors } from '#shared/services/cursors.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { settings } from '#shared/services/settings.ts';

/** What both conversation services are built on (adapters built on first use, as everywhere). */
export const conversationDeps = (c: ServiceContext): ConversationDeps => ({
  conversations: c.adapter('conversationStore'),
  tasks: c.adapter('startTaskStore'),
  settings: c.use(settings),
  sandboxes: c.use(sandboxes),
  cursors: c.use(cursors),
  keys: c.use(conversationKeys),
  versioned: new VersionedConversationUpdate(c.adapter('conversationStore')),
  starts: c.use(conversationStart),
});
