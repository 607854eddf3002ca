import { sweep } from '#shared/sandboxes/sweeper.ts';
import { sweeperFunction } from '#shared/functions.ts';
import { conversationHousekeeping, sandboxHousekeeping } from '#shared/services.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { workspaceSnapshots } from '#shared/wiring/aws/s3.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { specs } from '#shared/wiring/aws/specs.ts';

export const handler = awsFunction(sweeperFunction, { sandboxStore, sandboxRuntime, specs, sandboxConfig, workspaceSnapshots, startTaskStore }, { sandboxHousekeeping, conversationHousekeeping }, sweep);
