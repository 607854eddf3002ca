import { conversationReads } from '#shared/services/conversation-reads.ts';
import { settings } from '#shared/services/settings.ts';
import { getSettings } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

// conversationStore: a conversation key gets its conversation's view (shared/conversations/agent-server.ts).
export const handler = awsRoute(getSettings, { settings, conversationReads });
