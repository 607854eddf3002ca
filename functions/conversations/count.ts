import { countConversations } from '#shared/conversations/operations.ts';
import { awsRoute, conversationStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(countConversations, { conversationStore });
