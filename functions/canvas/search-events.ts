import { canvasSearchConversationEvents } from '#shared/events/agent-server-operations.ts';
import { events } from '#shared/services/events.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';

export const handler = awsRoute(
  canvasSearchConversationEvents,
  { eventStore, conversationStore, sealer, cursorKey },
  { events },
);
