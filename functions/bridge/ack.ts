import { sandboxCommandAck } from '#shared/sandboxes/bridge-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(sandboxCommandAck, { sandboxStore }, { sandboxBridge });
