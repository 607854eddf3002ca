import { conversations } from '#shared/services/conversations.ts';
import { settings } from '#shared/services/settings.ts';
import { getSettings } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

// conversationStore: a conversation key gets its conversation's view (shared/conversations/agent-server.ts).
export const handler = awsRoute(getSettings, { settingsStore, conversationStore }, { settings, conversations });
