import { defineOperation } from '#shared/http/operation.ts';

/** The user's conversation routes, V1 and legacy (the sandbox's own are in webhook-operations.ts). */
export const startConversation = defineOperation('startConversation', ({ userId, body, baseUrl }, { conversations }) =>
  conversations.start(userId, body, baseUrl),
);

export const listConversations = defineOperation('listConversations', ({ userId, query: { ids, ...search }, baseUrl }, { conversations }) =>
  ids.length ? conversations.getMany(userId, ids, baseUrl) : conversations.search(userId, search, baseUrl),
);

export const searchConversations = defineOperation('searchConversations', ({ userId, query, baseUrl }, { conversations }) =>
  conversations.search(userId, query, baseUrl),
);

export const countConversations = defineOperation('countConversations', ({ userId, query }, { conversations }) => conversations.count(userId, query));

export const searchStartTasks = defineOperation('searchStartTasks', ({ userId, query, baseUrl }, { conversations }) =>
  conversations.searchTasks(userId, query, baseUrl),
);

export const getStartTasks = defineOperation('getStartTasks', ({ userId, query, baseUrl }, { conversations }) =>
  conversations.getTasks(userId, query.ids, baseUrl),
);

// Talking to a running conversation: each becomes a command to its sandbox.
export const sendMessage = defineOperation('sendMessage', ({ userId, params, body }, { conversations }) =>
  conversations.command(userId, params.conversation_id, (id) => ({ type: 'send_message', conversation_id: id, message: body })),
);

export const pauseConversation = defineOperation('pauseConversation', ({ userId, params }, { conversations }) =>
  conversations.command(userId, params.conversation_id, (id) => ({ type: 'pause_conversation', conversation_id: id })),
);

export const runConversation = defineOperation('runConversation', ({ userId, params }, { conversations }) =>
  conversations.command(userId, params.conversation_id, (id) => ({ type: 'run_conversation', conversation_id: id })),
);

export const respondToConfirmation = defineOperation('respondToConfirmation', ({ userId, params, body }, { conversations }) =>
  conversations.command(userId, params.conversation_id, (id) => ({
    type: 'respond_to_confirmation',
    conversation_id: id,
    accept: body.accept,
    reason: body.reason ?? null,
  })),
);

export const legacyCreateConversation = defineOperation('legacyCreateConversation', ({ userId, body, baseUrl }, { conversations }) =>
  conversations.legacyCreate(userId, body, baseUrl),
);

export const legacyListConversations = defineOperation('legacyListConversations', ({ userId, query, baseUrl }, { conversations }) =>
  conversations.legacyList(userId, query, baseUrl),
);

export const legacyGetConversation = defineOperation('legacyGetConversation', ({ userId, params, baseUrl }, { conversations }) =>
  conversations.legacyGet(userId, params.conversation_id, baseUrl),
);

export const legacyUpdateConversation = defineOperation('legacyUpdateConversation', ({ userId, params, body }, { conversations }) =>
  conversations.rename(userId, params.conversation_id, body.title),
);

export const legacyDeleteConversation = defineOperation('legacyDeleteConversation', ({ userId, params }, { conversations }) =>
  conversations.remove(userId, params.conversation_id),
);

export const revokeConversationKey = defineOperation('revokeConversationKey', ({ userId, params }, { conversations }) =>
  conversations.revokeKey(userId, params.conversation_id),
);
