import { defineService } from '#shared/services.ts';
import { accounts } from '#shared/services/accounts.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { sessions } from '#shared/services/sessions.ts';
import { streamTickets } from '#shared/services/stream-tickets.ts';
import { StreamAccess } from '#shared/stream/access.ts';

export const streamAccess = defineService(
  {
    adapters: ['conversationStore', 'oidc', 'plans'],
    uses: [apiKeys, sessions, conversationKeys, accounts, streamTickets],
  },
  (c) =>
    new StreamAccess(
      {
        apiKeys: c.use(apiKeys),
        sessions: c.use(sessions),
        conversationKeys: c.use(conversationKeys),
        accounts: c.use(accounts),
        oidc: c.adapters.oidc,
        tickets: c.use(streamTickets),
        conversations: c.adapter('conversationStore'),
      },
      // Read at an open only (every function that opens streams has the plans adapter): its request rate.
      () => c.adapters.plans,
    ),
);
