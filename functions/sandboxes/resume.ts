import { resumeSandbox } from '#shared/sandboxes/operations.ts';
import { awsRoute, bridgeUrl, sandboxConfig, sandboxRuntime, sandboxStore, specs } from '#shared/wiring/aws.ts';

export const handler = awsRoute(resumeSandbox, { sandboxStore, sandboxRuntime, specs, sandboxConfig, bridgeUrl });
