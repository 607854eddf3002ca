import { getStartTasks } from '#shared/conversations/operations.ts';
import { conversations } from '#shared/services/conversations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { startTaskStore } from '#shared/wiring/aws/conversations.ts';

export const handler = awsRoute(getStartTasks, { startTaskStore }, { conversations });
