import { legacyCreateConversation } from '#shared/conversations/operations.ts';
import { awsRoute, bridgeUrl, conversationStore, sandboxConfig, sandboxRuntime, sandboxStore, sealer, settingsStore, specs, startTaskStore } from '#shared/wiring/aws.ts';

export const handler = awsRoute(legacyCreateConversation, { conversationStore, startTaskStore, settingsStore, sealer, sandboxStore, sandboxRuntime, specs, sandboxConfig, bridgeUrl });
