import { searchStartTasks } from '#shared/conversations/operations.ts';
import { conversationReads } from '#shared/services/conversation-reads.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(searchStartTasks, { conversationReads });
