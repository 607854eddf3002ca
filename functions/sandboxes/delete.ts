import { deleteSandbox } from '#shared/sandboxes/operations.ts';
import { awsRoute, sandboxConfig, sandboxRuntime, sandboxStore, specs } from '#shared/wiring/aws.ts';

export const handler = awsRoute(deleteSandbox, { sandboxStore, sandboxRuntime, specs, sandboxConfig });
