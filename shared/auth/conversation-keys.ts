import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Conversation-scoped keys: `acsc.<user, base64url>.<conversation id>.<version>.<HMAC>`. Derived,
 * never stored: the HMAC-SHA256 of user, conversation and the conversation's key version under a
 * service key that is itself sealed in the keys table (`systemKey('conversation-keys')`). Bumping
 * the version (or deleting the conversation) revokes every key handed out before.
 *
 * Such a key is what the OpenHands UI sends as the conversation's `session_api_key`: it is valid
 * only on the routes that declare `conversationKey` (that conversation's relay and event routes).
 */
const PREFIX = 'acsc';
const PATTERN = /^acsc\.([A-Za-z0-9_-]{1,200})\.([0-9a-f]{32})\.([1-9][0-9]{0,9})\.([A-Za-z0-9_-]{43})$/;

export const isConversationKey = (key: string) => key.startsWith(`${PREFIX}.`);

export interface ConversationKeyClaim {
  userId: string;
  conversationId: string;
}

export class ConversationKeys {
  /**
   * @param secret the service's signing key (created on first use, sealed at rest)
   * @param currentVersion the conversation's key version when `userId` owns it; undefined when it
   *   is unknown, deleted or someone else's
   */
  constructor(
    private readonly secret: () => Promise<Buffer>,
    private readonly currentVersion: (userId: string, conversationId: string) => Promise<number | undefined>,
  ) {}

  /** The key for this user, conversation and key version (the same inputs always give the same key). */
  async mint(userId: string, conversationId: string, version: number): Promise<string> {
    const user = Buffer.from(userId, 'utf8').toString('base64url');
    return `${PREFIX}.${user}.${conversationId}.${version}.${await this.mac(user, conversationId, version)}`;
  }

  /** The current key of a conversation record (its version, 1 before any revocation): what every view shows. */
  forRecord(rec: { userId: string; id: string; keyVersion?: number | null }): Promise<string> {
    return this.mint(rec.userId, rec.id, rec.keyVersion ?? 1);
  }

  /** The user and conversation a key stands for, or null (malformed, forged, revoked, conversation gone). */
  async verify(key: string): Promise<ConversationKeyClaim | null> {
    const m = PATTERN.exec(key);
    if (!m) return null;
    const [, user, conversationId, versionText, mac] = m as unknown as [string, string, string, string, string];
    const version = Number(versionText);
    const expected = Buffer.from(await this.mac(user, conversationId, version), 'base64url');
    const actual = Buffer.from(mac, 'base64url');
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
    const userId = Buffer.from(user, 'base64url').toString('utf8');
    if ((await this.currentVersion(userId, conversationId)) !== version) return null;
    return { userId, conversationId };
  }

  private async mac(user: string, conversationId: string, version: number): Promise<string> {
    return createHmac('sha256', await this.secret())
      .update(`conversation-key\n${user}\n${conversationId}\n${version}`)
      .digest('base64url');
  }
}
