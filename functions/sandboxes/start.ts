import { startSandbox } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { poolClaims } from '#shared/services/pool-claims.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { idempotencyStore } from '#shared/wiring/aws/idempotency.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { poolStore } from '#shared/wiring/aws/pool.ts';
import { poolRefill } from '#shared/wiring/aws/pool-refill.ts';
import { poolDeadline } from '#shared/wiring/aws/pool-deadline.ts';
import { bridgeUrl, sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(
  startSandbox,
  {
    sandboxStore,
    sandboxRuntime,
    specs,
    sandboxConfig,
    bridgeUrl,
    plans,
    usageStore,
    settingsStore,
    idempotencyStore,
    poolStore,
    poolRefill,
    poolDeadline,
    // The claim's wake-up on the standby's pool socket.
    commandPush,
    prices,
  },
  { sandboxes, idempotency, poolClaims },
);
