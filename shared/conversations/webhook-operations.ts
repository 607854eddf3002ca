import { defineOperation } from '#shared/http/operation.ts';

/** The webhooks a sandbox calls with its own key: events, start progress and status, its start configuration. */
export const postEvents = defineOperation('postEvents', ({ params, query, headers, body }, { conversationBridge }) =>
  conversationBridge.postEvents(params.sandbox_id, headers['x-session-api-key'], params.conversation_id, query.first_seq, body),
);

export const reportConversation = defineOperation('reportConversation', ({ params, headers, body }, { conversationBridge }) =>
  conversationBridge.report(params.sandbox_id, headers['x-session-api-key'], body),
);

export const getStartConfig = defineOperation('getStartConfig', ({ params, headers }, { conversationBridge }) =>
  conversationBridge.startConfig(params.sandbox_id, headers['x-session-api-key'], params.conversation_id),
);
