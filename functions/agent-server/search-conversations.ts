import { agentServerSearchConversations } from '#shared/conversations/agent-server-operations.ts';
import { conversationReads } from '#shared/services/conversation-reads.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(agentServerSearchConversations, { conversationReads });
