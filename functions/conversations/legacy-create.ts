import { legacyCreateConversation } from '#shared/conversations/legacy-operations.ts';
import { legacyConversations } from '#shared/services/legacy-conversations.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { poolClaims } from '#shared/services/pool-claims.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { idempotencyStore } from '#shared/wiring/aws/idempotency.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { conversationStore, startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { poolStore } from '#shared/wiring/aws/pool.ts';
import { poolRefill } from '#shared/wiring/aws/pool-refill.ts';
import { poolDeadline } from '#shared/wiring/aws/pool-deadline.ts';
import { bridgeUrl, sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';
import { specs } from '#shared/wiring/aws/specs.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';
import { platformModels } from '#shared/wiring/aws/llm.ts';

export const handler = awsRoute(
  legacyCreateConversation,
  {
    conversationStore,
    startTaskStore,
    settingsStore,
    sealer,
    sandboxStore,
    commandPush,
    sandboxRuntime,
    specs,
    sandboxConfig,
    bridgeUrl,
    plans,
    usageStore,
    platformModels,
    idempotencyStore,
    poolStore,
    poolRefill,
    poolDeadline,
    prices,
  },
  { legacyConversations, idempotency, poolClaims },
);
