import { legacyUpdateConversation } from '#shared/conversations/legacy-operations.ts';
import { conversations } from '#shared/services/conversations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';

export const handler = awsRoute(legacyUpdateConversation, { conversationStore }, { conversations });
