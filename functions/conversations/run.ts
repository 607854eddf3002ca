import { runConversation } from '#shared/conversations/operations.ts';
import { conversationCommands } from '#shared/services/conversation-commands.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(runConversation, { conversationCommands });
