import { searchStartTasks } from '#shared/conversations/operations.ts';
import { awsRoute, cursorKey, sealer, startTaskStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(searchStartTasks, { startTaskStore, sealer, cursorKey });
