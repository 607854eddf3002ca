import { PlatformLlmPolicy } from '#shared/llm/policy.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const platformLlms: ServiceFactory<PlatformLlmPolicy> = (c) =>
  new PlatformLlmPolicy(c.adapter('platformModels'), () => c.adapters.plans);
