import * as z from '#shared/zod.ts';
import { AGENT_SERVER_COMPAT_VERSION } from '#shared/conversations/agent-server.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { conversationIdSchema } from '#shared/protocol.ts';

/** The agent server's service routes and conversation actions at a conversation's `conversation_url` (docs/openhands-clients.md). */

const startedAt = Date.now();

export const agentServerAlive = defineOperation(
  'agentServerAlive',
  () => ({ response: z.object({ status: z.literal('ok') }) }),
  async () => ({ status: 'ok' as const }),
);

export const agentServerReady = defineOperation(
  'agentServerReady',
  () => ({ response: z.object({ status: z.literal('ready') }) }),
  async () => ({ status: 'ready' as const }),
);

export const agentServerInfo = defineOperation(
  'agentServerInfo',
  () => ({
    response: z.object({
      uptime: z.number(),
      idle_time: z.number(),
      title: z.string(),
      version: z.string(),
      sdk_version: z.string(),
      tools_version: z.string(),
      workspace_version: z.string(),
    }),
  }),
  async () => ({
    // Of this function instance (a Lambda's life, a process's locally): nothing depends on it.
    uptime: Math.floor((Date.now() - startedAt) / 1000),
    idle_time: 0,
    title: 'Agent Conversation Service (OpenHands agent-server compatible)',
    version: AGENT_SERVER_COMPAT_VERSION,
    sdk_version: AGENT_SERVER_COMPAT_VERSION,
    tools_version: AGENT_SERVER_COMPAT_VERSION,
    workspace_version: AGENT_SERVER_COMPAT_VERSION,
  }),
);

export const agentServerInterrupt = defineOperation(
  'agentServerInterrupt',
  () => ({ params: z.object({ conversation_id: conversationIdSchema }), response: z.object({ success: z.boolean() }) }),
  ({ userId, params }, { conversations }) =>
    conversations.command(userId, params.conversation_id, (id) => ({
      type: 'pause_conversation',
      conversation_id: id,
    })),
);
