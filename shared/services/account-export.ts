import { AccountExport } from '#shared/accounts/export.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { settings } from '#shared/services/settings.ts';

export const accountExport: ServiceFactory<AccountExport> = (c) =>
  new AccountExport(c.adapter('conversationStore'), c.adapter('eventStore'), c.use(settings), c.use(apiKeys));
