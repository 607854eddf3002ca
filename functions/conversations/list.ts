import { listConversations } from '#shared/conversations/operations.ts';
import { awsRoute, conversationStore, cursorKey, sandboxStore, sealer } from '#shared/wiring/aws.ts';

export const handler = awsRoute(listConversations, { conversationStore, sandboxStore, sealer, cursorKey });
