import { postEvents } from '#shared/conversations/bridge-operations.ts';
import { conversationBridge } from '#shared/services/conversation-bridge.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(postEvents, { sandboxBridge, conversationBridge });
