import { getStartConfig } from '#shared/conversations/bridge-operations.ts';
import { conversationBridge } from '#shared/services/conversation-bridge.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore, startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { conversationKeySecret } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { platformModels } from '#shared/wiring/aws/llm.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { bridgeUrl, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(
  getStartConfig,
  {
    conversationStore,
    startTaskStore,
    settingsStore,
    sealer,
    sandboxStore,
    conversationKeySecret,
    platformModels,
    plans,
    bridgeUrl,
  },
  { sandboxBridge, conversationBridge },
);
