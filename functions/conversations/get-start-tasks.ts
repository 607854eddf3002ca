import { getStartTasks } from '#shared/conversations/operations.ts';
import { awsRoute, startTaskStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getStartTasks, { startTaskStore });
