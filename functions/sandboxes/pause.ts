import { pauseSandbox } from '#shared/sandboxes/operations.ts';
import { awsRoute, sandboxConfig, sandboxRuntime, sandboxStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(pauseSandbox, { sandboxStore, sandboxRuntime, sandboxConfig });
