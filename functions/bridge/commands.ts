import { sandboxCommands } from '#shared/sandboxes/bridge-operations.ts';
import { awsRoute, sandboxConfig, sandboxStore, sealer } from '#shared/wiring/aws.ts';

export const handler = awsRoute(sandboxCommands, { sandboxStore, sealer, sandboxConfig });
