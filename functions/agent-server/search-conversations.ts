import { agentServerSearchConversations } from '#shared/conversations/agent-server-operations.ts';
import { conversations } from '#shared/services/conversations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { cursorKey } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';

export const handler = awsRoute(
  agentServerSearchConversations,
  { conversationStore, sealer, cursorKey },
  { conversations },
);
