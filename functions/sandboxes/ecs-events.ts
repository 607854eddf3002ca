import { ecsEventsFunction } from '#shared/functions.ts';
import { handleTaskStateChange } from '#shared/sandboxes/ecs-events.ts';
import { sandboxHousekeeping } from '#shared/services/sandbox-housekeeping.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { poolStore } from '#shared/wiring/aws/pool.ts';
import { poolRefill } from '#shared/wiring/aws/pool-refill.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { snapshotRemoval } from '#shared/wiring/aws/snapshot-removal.ts';
import { specs } from '#shared/wiring/aws/specs.ts';

export const handler = awsFunction(
  ecsEventsFunction,
  { sandboxStore, sandboxRuntime, specs, sandboxConfig, snapshotRemoval, poolStore, poolRefill, prices, usageStore },
  { sandboxHousekeeping, warmPool },
  handleTaskStateChange,
);
