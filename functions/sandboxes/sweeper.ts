import { sweep } from '#shared/sandboxes/sweeper.ts';
import { sweeperFunction } from '#shared/functions.ts';
import { awsFunction, sandboxConfig, sandboxRuntime, sandboxStore, specs, startTaskStore } from '#shared/wiring/aws.ts';

export const handler = awsFunction(sweeperFunction, { sandboxStore, sandboxRuntime, specs, sandboxConfig, startTaskStore }, sweep);
