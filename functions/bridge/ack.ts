import { sandboxCommandAck } from '#shared/sandboxes/bridge-operations.ts';
import { awsRoute, sandboxStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(sandboxCommandAck, { sandboxStore });
