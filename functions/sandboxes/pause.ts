import { pauseSandbox } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(
  pauseSandbox,
  { sandboxStore, sandboxRuntime, sandboxConfig, prices, usageStore, specs },
  { sandboxes },
);
