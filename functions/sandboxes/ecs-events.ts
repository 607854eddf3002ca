import { ecsEventsFunction } from '#shared/functions.ts';
import { handleTaskStateChange } from '#shared/sandboxes/ecs-events.ts';
import { awsFunction, sandboxConfig, sandboxRuntime, sandboxStore, specs } from '#shared/wiring/aws.ts';

export const handler = awsFunction(ecsEventsFunction, { sandboxStore, sandboxRuntime, specs, sandboxConfig }, handleTaskStateChange);
