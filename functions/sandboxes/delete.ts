import { deleteSandbox } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { snapshotRemoval } from '#shared/wiring/aws/snapshot-removal.ts';
import { specs } from '#shared/wiring/aws/specs.ts';

export const handler = awsRoute(
  deleteSandbox,
  { sandboxStore, sandboxRuntime, specs, sandboxConfig, snapshotRemoval, prices, usageStore },
  { sandboxes },
);
