import { sandboxHeartbeat } from '#shared/sandboxes/bridge-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { usageBus } from '#shared/wiring/aws/usage-bus.ts';

export const handler = awsRoute(
  sandboxHeartbeat,
  { sandboxStore, sandboxConfig, specs, usageStore, prices, plans, usageBus },
  { sandboxBridge },
);
