import { deleteSandbox } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { workspaceSnapshots } from '#shared/wiring/aws/s3.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { specs } from '#shared/wiring/aws/specs.ts';

export const handler = awsRoute(deleteSandbox, { sandboxStore, sandboxRuntime, specs, sandboxConfig, workspaceSnapshots }, { sandboxes });
