import { randomBytes } from 'node:crypto';
import { hashKey } from '#shared/auth/api-keys.ts';
import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import { notFound } from '#shared/http/errors.ts';
import type { StreamTicketStore } from '#shared/stream/ticket-store.ts';

/** How long a ticket can be used: long enough to open a socket right after asking for it. */
export const TICKET_SECONDS = 60;
const TICKET_PATTERN = /^acst_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

/**
 * Stream tickets: what a client that cannot put a key in a header, nor rely on the cookie, uses to
 * open one conversation's stream. `acst_<id>_<secret>`, issued to the conversation's owner by an
 * authenticated POST, valid for `TICKET_SECONDS`, for that conversation only, and once: only its
 * SHA-256 is stored, and redeeming it is a conditional delete.
 */
export class StreamTickets {
  constructor(
    private readonly store: StreamTicketStore,
    private readonly conversations: Pick<ConversationStore, 'get'>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** A ticket for the caller's own conversation (404 for another's or an unknown one); shown once. */
  async issue(userId: string, conversationId: string): Promise<{ ticket: string; expires_at: string }> {
    const conversation = await this.conversations.get(userId, conversationId);
    if (!conversation || conversation.userId !== userId) throw notFound('Conversation not found');
    const ticketId = randomBytes(16).toString('hex');
    const ticket = `acst_${ticketId}_${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(this.now().getTime() + TICKET_SECONDS * 1000).toISOString();
    await this.store.put({ ticketId, userId, conversationId, hash: hashKey(ticket), expiresAt });
    return { ticket, expires_at: expiresAt };
  }

  /** The user and conversation of a valid ticket, which is used up by this call; null otherwise. */
  async redeem(ticket: string): Promise<{ userId: string; conversationId: string } | null> {
    const m = TICKET_PATTERN.exec(ticket);
    if (!m) return null;
    const record = await this.store.take(m[1]!, hashKey(ticket), this.now());
    return record ? { userId: record.userId, conversationId: record.conversationId } : null;
  }
}
