import type { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { ConversationStore, StartTaskStore } from '#shared/conversations/conversation-store.ts';
import type { ConversationSandboxes, ConversationStart } from '#shared/conversations/start.ts';
import type { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import type { SettingsService } from '#shared/settings/service.ts';

/** What both conversation services (the V1 API's, `service.ts`, and the legacy one's) are built on. */
export interface ConversationDeps {
  conversations: ConversationStore;
  tasks: StartTaskStore;
  settings: Pick<SettingsService, 'find'>;
  sandboxes: Pick<ConversationSandboxes, 'statuses' | 'enqueueCommand'>;
  cursors: CursorCodec;
  keys: ConversationKeys;
  versioned: VersionedConversationUpdate;
  starts: ConversationStart;
}
