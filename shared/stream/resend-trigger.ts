import type { ConversationRef } from '#shared/events/event-store.ts';

/** What `$connect` hands the resend step: the connection to bring up to date once it is open. */
export interface ResendRequest {
  conversation: ConversationRef;
  connectionId: string;
}

/**
 * Starts the resend step after `$connect` without waiting for it (`$connect` cannot send: the
 * connection opens only once it has returned). Adapters: `LambdaResendTrigger` (an asynchronous
 * invoke of the resend function).
 */
export interface ResendTrigger {
  request(r: ResendRequest): Promise<void>;
}
