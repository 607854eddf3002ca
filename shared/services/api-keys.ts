import { ApiKeys } from '#shared/auth/api-keys.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const apiKeys: ServiceFactory<ApiKeys> = (c) => new ApiKeys(c.adapter('keyStore'));
