import { sweeperFunction } from '#shared/functions.ts';
import { deadlineOf, sweep } from '#shared/sandboxes/sweeper.ts';
import { conversationHousekeeping } from '#shared/services/conversation-housekeeping.ts';
import { eventBytes } from '#shared/services/event-bytes.ts';
import { sandboxHousekeeping } from '#shared/services/sandbox-housekeeping.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { sweepPoolClaims } from '#shared/services/pool-claims.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { socketStreamOf } from '#shared/stream/socket-stream.ts';

export const handler = awsFunction(
  sweeperFunction,
  { sandboxHousekeeping, conversationHousekeeping, warmPool, poolClaims: sweepPoolClaims, eventBytes },
  async (event: unknown, services, adapters) =>
    deadlineOf(event)
      ? sweep(event, services)
      : {
          ...(await sweep(event, services)),
          pendingStreamsDropped: await socketStreamOf(services, adapters).sweepPending(new Date()),
        },
  { adapters: ['streamConnectionStore', 'streamPush'] },
);
