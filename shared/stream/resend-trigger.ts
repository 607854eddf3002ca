import type { ConversationRef } from '#shared/events/event-store.ts';

/** What `$connect` hands the resend step: the connection to bring up to date once it is open. */
export interface ResendRequest {
  conversation: ConversationRef;
  connectionId: string;
  /**
   * Set by a resend that stopped within its function's timeout with more to send, when it invokes the
   * resend function again: the connection is open already, so the next one sends from `sentSeq` at once.
   */
  resume?: boolean;
}

/**
 * Starts the resend step after `$connect` without waiting for it (`$connect` cannot send: the
 * connection opens only once it has returned); also how a resend continues itself. Adapters:
 * `LambdaResendTrigger` (an asynchronous invoke of the resend function).
 */
export interface ResendTrigger {
  request(r: ResendRequest): Promise<void>;
}
