import { postEvents } from '#shared/conversations/bridge-operations.ts';
import { conversationBridge } from '#shared/services/conversation-bridge.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { eventFeed, streamConnectionStore, streamPush } from '#shared/wiring/aws/stream.ts';
import { platformModels } from '#shared/wiring/aws/llm.ts';
import { agentReports } from '#shared/wiring/aws/agent-reports.ts';

export const handler = awsRoute(
  postEvents,
  {
    conversationStore,
    eventStore,
    sandboxStore,
    eventFeed,
    streamConnectionStore,
    streamPush,
    plans,
    commandPush,
    agentReports,
    platformModels,
  },
  { sandboxBridge, conversationBridge },
);
