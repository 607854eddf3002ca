import { ecsEventsFunction } from '#shared/functions.ts';
import { handleTaskStateChange } from '#shared/sandboxes/ecs-events.ts';
import { sandboxHousekeeping } from '#shared/services/sandbox-housekeeping.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

export const handler = awsFunction(ecsEventsFunction, { sandboxHousekeeping, warmPool }, handleTaskStateChange);
