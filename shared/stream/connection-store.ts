import type { ConversationRef } from '#shared/events/event-store.ts';

/** One open WebSocket connection of a conversation's stream on AWS, as stored. */
export interface StreamConnection {
  conversation: ConversationRef;
  connectionId: string;
  /** Events 1..sentSeq went out to it, in order (its start position when nothing was sent yet). */
  sentSeq: number;
  /** The committed end it is to be brought to: the highest any ingest or the resend step asked for. */
  wantSeq: number;
  /** Open for pushes: the resend step saw API Gateway report the connection established. */
  ready: boolean;
  connectedAt: string;
}

/**
 * A connection that opened without credentials and has not yet sent its auth frame (first-message
 * auth on AWS, shared/stream/first-message-auth.ts). Kept in one partition `pending` (no user is
 * known yet), and counted per client address (`addPending` refuses one past the limit).
 */
export interface PendingConnection {
  conversationId: string;
  connectionId: string;
  /** The client's address as limits count it (shared/http/client-address.ts `clientAddress`). */
  address: string;
  /** The stream query of the handshake (resend position), used once the key is accepted. */
  query: Record<string, string | undefined>;
  deadline: string;
}

/**
 * The stream's connections by conversation (the `streamConnections` table). Delivery to one
 * connection is serialized by a lease on its item: whoever holds it sends from `sentSeq` on and
 * moves `sentSeq` after each message with a condition on the lease, so two ingest functions never
 * send the same event to one connection, and neither sends past the other.
 * Adapters: `DynamoConnectionStore`.
 */
export interface ConnectionStore {
  add(c: {
    conversation: ConversationRef;
    connectionId: string;
    sentSeq: number;
    connectedAt: Date;
    expiresAt: Date;
  }): Promise<void>;
  get(conversation: ConversationRef, connectionId: string): Promise<StreamConnection | undefined>;
  /**
   * Records a connection waiting for its auth frame until `deadline`, unless its address already
   * holds `maxPerAddress` pending connections: then nothing stays recorded and the answer is false.
   * Recorded first, counted after (a consistent read), so racing connections from one address never
   * pass the limit together (they may all be refused instead).
   */
  addPending(p: PendingConnection, maxPerAddress: number): Promise<boolean>;
  /** The pending record of a connection, removed as it is read (only one caller gets it); undefined when there is none. */
  takePending(connectionId: string): Promise<PendingConnection | undefined>;
  /** Pending connections past their deadline (a Query of the pending partition, which holds connections of the last seconds only). */
  expiredPending(now: Date): Promise<PendingConnection[]>;
  /** The connection's conversation, from its id alone ($disconnect knows nothing else); undefined for a pending one. */
  find(connectionId: string): Promise<ConversationRef | undefined>;
  list(conversation: ConversationRef): Promise<StreamConnection[]>;
  /** Open connections of a conversation (a consistent count) and of a user (the `byUser` index: eventually consistent), each counted up to `upTo`. */
  count(conversation: ConversationRef, upTo: number): Promise<{ conversation: number; user: number }>;
  remove(conversation: ConversationRef, connectionId: string): Promise<void>;
  /** Raises `wantSeq` to `seq` (never lowers it); nothing when the connection is gone. */
  want(conversation: ConversationRef, connectionId: string, seq: number): Promise<void>;
  /** Opens it for pushes; false when the connection is gone. */
  markReady(conversation: ConversationRef, connectionId: string): Promise<boolean>;
  /** Takes the delivery lease when the connection is ready, behind (`sentSeq < wantSeq`) and free (or its lease expired). */
  lease(
    conversation: ConversationRef,
    connectionId: string,
    owner: string,
    nowMs: number,
    untilMs: number,
  ): Promise<StreamConnection | undefined>;
  /** `sentSeq` from `from` to `to` under the lease, which it extends; false when the lease was lost. */
  advance(
    conversation: ConversationRef,
    connectionId: string,
    owner: string,
    from: number,
    to: number,
    untilMs: number,
  ): Promise<boolean>;
  /** Gives the lease back; the connection as it is now (another ingest may have raised `wantSeq` meanwhile). */
  release(conversation: ConversationRef, connectionId: string, owner: string): Promise<StreamConnection | undefined>;
}
