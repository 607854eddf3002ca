import type { ApiKeys } from '#shared/auth/api-keys.ts';
import type { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { Sessions } from '#shared/auth/sessions.ts';
import type { ConversationBridge } from '#shared/conversations/bridge.ts';
import type { ConversationService } from '#shared/conversations/service.ts';
import type { EventService } from '#shared/events/service.ts';
import type { CursorCodec } from '#shared/http/cursor.ts';
import type { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';
import type { SettingsService } from '#shared/settings/service.ts';

/**
 * What handlers may use. Built once per container by a wiring file (`wiring/aws.ts` or
 * `wiring/local.ts`), which is the only place that picks adapters.
 */
export interface Services {
  apiKeys: ApiKeys;
  sessions: Sessions;
  conversationKeys: ConversationKeys;
  settings: SettingsService;
  cursors: CursorCodec;
  conversations: ConversationService;
  conversationBridge: ConversationBridge;
  events: EventService;
  sandboxes: SandboxService;
  sandboxSpecs: SandboxSpecService;
}
