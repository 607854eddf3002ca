import { sandboxHeartbeat } from '#shared/sandboxes/bridge-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { usageBus } from '#shared/wiring/aws/usage-bus.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { eventFeed, streamConnectionStore, streamPush } from '#shared/wiring/aws/stream.ts';

export const handler = awsRoute(
  sandboxHeartbeat,
  {
    sandboxStore,
    sandboxConfig,
    specs,
    usageStore,
    prices,
    plans,
    usageBus,
    // A hard limit's pause: an event on each of the sandbox's conversations (shared/conversations/pause-notices.ts).
    conversationStore,
    eventStore,
    eventFeed,
    streamConnectionStore,
    streamPush,
  },
  { sandboxBridge },
);
