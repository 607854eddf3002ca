import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { DynamoSessionStore } from '#shared/auth/dynamo-session-store.ts';
import { systemKey } from '#shared/auth/system-keys.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The keys table: API keys, and the service's own sealed keys (the cursor and conversation-key signing keys), browser sessions. */
export const keyStore: Builder<'keyStore'> = () => new DynamoKeyStore();
export const cursorKey: Builder<'cursorKey'> = (get) => systemKey('cursor', get('sealer'));
export const conversationKeySecret: Builder<'conversationKeySecret'> = (get) =>
  systemKey('conversation-keys', get('sealer'));
export const sessionStore: Builder<'sessionStore'> = () => new DynamoSessionStore();
