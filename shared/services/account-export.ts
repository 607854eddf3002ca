import { AccountExport } from '#shared/accounts/export.ts';
import { defineService } from '#shared/services.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { settings } from '#shared/services/settings.ts';

export const accountExport = defineService(
  { adapters: ['conversationStore', 'eventStore'], uses: [settings, apiKeys] },
  (c) => new AccountExport(c.adapter('conversationStore'), c.adapter('eventStore'), c.use(settings), c.use(apiKeys)),
);
