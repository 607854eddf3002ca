import { Sessions, sessionSeconds } from '#shared/auth/sessions.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { apiKeys } from '#shared/services/api-keys.ts';

export const sessions: ServiceFactory<Sessions> = (c) =>
  new Sessions(
    c.adapter('sessionStore'),
    c.use(apiKeys),
    () => sessionSeconds(),
    undefined,
    () => c.adapters.origins,
  );
