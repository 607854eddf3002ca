/** A stream ticket as stored: only the SHA-256 of the ticket, with whose and which conversation's it is. */
export interface StreamTicketRecord {
  ticketId: string;
  userId: string;
  conversationId: string;
  hash: string;
  expiresAt: string;
}

/** Storage of stream tickets. Adapters: `DynamoStreamTicketStore` (in the keys table). */
export interface StreamTicketStore {
  put(record: StreamTicketRecord): Promise<void>;
  /**
   * Removes the ticket and returns it when its hash matches and it has not expired at `now`, in one
   * conditional delete: of two connections presenting the same ticket at once, exactly one gets it.
   * Undefined otherwise (unknown, used, wrong secret, expired), and then nothing is removed.
   */
  take(ticketId: string, hash: string, now: Date): Promise<StreamTicketRecord | undefined>;
}
