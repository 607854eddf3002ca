import { searchConversations } from '#shared/conversations/operations.ts';
import { awsRoute, conversationStore, cursorKey, sandboxStore, sealer } from '#shared/wiring/aws.ts';

export const handler = awsRoute(searchConversations, { conversationStore, sandboxStore, sealer, cursorKey });
