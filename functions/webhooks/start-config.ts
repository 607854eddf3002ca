import { getStartConfig } from '#shared/conversations/webhook-operations.ts';
import { conversationBridge } from '#shared/services/conversation-bridge.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore, startTaskStore } from '#shared/wiring/aws/conversations.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { settingsStore } from '#shared/wiring/aws/settings.ts';

export const handler = awsRoute(
  getStartConfig,
  { conversationStore, startTaskStore, settingsStore, sealer, sandboxStore },
  { sandboxBridge, conversationBridge },
);
