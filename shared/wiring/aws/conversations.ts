import { DynamoConversationStore, DynamoStartTaskStore } from '#shared/conversations/dynamo-conversation-store.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

export const conversationStore: Builder<'conversationStore'> = () => new DynamoConversationStore();
export const startTaskStore: Builder<'startTaskStore'> = () => new DynamoStartTaskStore();
