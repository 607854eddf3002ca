import { Sessions, sessionSeconds } from '#shared/auth/sessions.ts';
import { defineService } from '#shared/services.ts';
import { apiKeys } from '#shared/services/api-keys.ts';

export const sessions = defineService(
  { adapters: ['sessionStore', 'origins'], uses: [apiKeys] },
  (c) =>
    new Sessions(
      c.adapter('sessionStore'),
      c.use(apiKeys),
      () => sessionSeconds(),
      undefined,
      () => c.adapters.origins,
    ),
);
