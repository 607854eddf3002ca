import { sweeperFunction } from '#shared/functions.ts';
import { deadlineOf, sweep } from '#shared/sandboxes/sweeper.ts';
import { conversationHousekeeping } from '#shared/services/conversation-housekeeping.ts';
import { eventBytes } from '#shared/services/event-bytes.ts';
import { sandboxHousekeeping } from '#shared/services/sandbox-housekeeping.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { sweepPoolClaims } from '#shared/services/pool-claims.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { orgEventBytes } from '#shared/wiring/aws/org-event-bytes.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { poolStore } from '#shared/wiring/aws/pool.ts';
import { poolRefill } from '#shared/wiring/aws/pool-refill.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { snapshotRemoval } from '#shared/wiring/aws/snapshot-removal.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { streamConnectionStore, streamPush } from '#shared/wiring/aws/stream.ts';
import { socketStreamOf } from '#shared/stream/socket-stream.ts';

export const handler = awsFunction(
  sweeperFunction,
  {
    sandboxStore,
    sandboxRuntime,
    specs,
    sandboxConfig,
    snapshotRemoval,
    startTaskStore,
    orgEventBytes,
    streamConnectionStore,
    streamPush,
    poolStore,
    poolRefill,
    commandPush,
    prices,
    usageStore,
  },
  { sandboxHousekeeping, conversationHousekeeping, warmPool, poolClaims: sweepPoolClaims, eventBytes },
  // Then the event stream's connections still waiting for their auth frame past the deadline (first-message auth);
  // a claim's binding deadline (the state machine's call) looks at that claim alone.
  async (event: unknown, services, adapters) =>
    deadlineOf(event)
      ? sweep(event, services)
      : {
          ...(await sweep(event, services)),
          pendingStreamsDropped: await socketStreamOf(services, adapters).sweepPending(new Date()),
        },
);
