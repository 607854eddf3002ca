import { searchSandboxes } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(searchSandboxes, { sandboxes });
