import { sandboxHeartbeat } from '#shared/sandboxes/bridge-operations.ts';
import { awsRoute, sandboxConfig, sandboxStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(sandboxHeartbeat, { sandboxStore, sandboxConfig });
