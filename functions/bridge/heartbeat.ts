import { sandboxHeartbeat } from '#shared/sandboxes/bridge-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(sandboxHeartbeat, { sandboxBridge });
