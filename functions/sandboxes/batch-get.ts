import { getSandboxes } from '#shared/sandboxes/operations.ts';
import { awsRoute, sandboxStore, sealer } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getSandboxes, { sandboxStore, sealer });
