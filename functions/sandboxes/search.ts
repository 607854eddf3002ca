import { searchSandboxes } from '#shared/sandboxes/operations.ts';
import { awsRoute, cursorKey, sandboxStore, sealer } from '#shared/wiring/aws.ts';

export const handler = awsRoute(searchSandboxes, { sandboxStore, sealer, cursorKey });
