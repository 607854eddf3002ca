import { PlatformLlmPolicy } from '#shared/llm/policy.ts';
import { defineService } from '#shared/services.ts';

export const platformLlms = defineService(
  { adapters: ['platformModels', 'plans'] },
  (c) => new PlatformLlmPolicy(c.adapter('platformModels'), () => c.adapters.plans),
);
