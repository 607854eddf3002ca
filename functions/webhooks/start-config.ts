import { getStartConfig } from '#shared/conversations/webhook-operations.ts';
import { awsRoute, conversationStore, sandboxStore, sealer, settingsStore, startTaskStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getStartConfig, { conversationStore, startTaskStore, settingsStore, sealer, sandboxStore });
