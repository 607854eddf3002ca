import { LlmCredentials } from '#shared/llm/credential.ts';
import { defineService } from '#shared/services.ts';

/** Gateway credentials, signed with the conversation-key service key (its own domain label). */
export const llmCredentials = defineService(
  { adapters: ['conversationKeySecret'] },
  (c) => new LlmCredentials(() => c.adapters.conversationKeySecret()),
);
