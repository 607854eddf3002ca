import { getSandboxes } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(getSandboxes, { sandboxStore }, { sandboxes });
