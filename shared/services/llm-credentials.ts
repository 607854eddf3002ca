import { LlmCredentials } from '#shared/llm/credential.ts';
import type { ServiceFactory } from '#shared/services.ts';

/** Gateway credentials, signed with the conversation-key service key (its own domain label). */
export const llmCredentials: ServiceFactory<LlmCredentials> = (c) =>
  new LlmCredentials(() => c.adapters.conversationKeySecret());
