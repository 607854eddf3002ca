import * as z from '#shared/zod.ts';

/** User ids are chosen by whoever issues keys; this keeps them safe in paths, logs and keys. */
export const userIdSchema = z.lazy(() =>
  z
    .string()
    .check(
      z.regex(
        /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/,
        'user id: 1-128 of A-Z a-z 0-9 . _ @ -, starting with a letter or digit',
      ),
    ),
);

export interface ApiKeyRecord {
  keyId: string;
  userId: string;
  name: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  hash: string;
  createdAt: string;
  lastUsedAt?: string;
  revokedAt?: string;
  /** When the key stops working (optional, set at creation): refused from then on, cached or not. */
  expiresAt?: string;
}

/** A key as the keys API shows it (never the key itself, except once in its creation's response). */
export const apiKeyView = z.lazy(() =>
  z.object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    created_at: z.string(),
    last_used_at: z.nullable(z.string()),
    expires_at: z.nullable(z.string()),
  }),
);

/** What a caller sees of a key: never the hash. */
export type ApiKeyInfo = Omit<ApiKeyRecord, 'hash'>;

/**
 * Who is calling and with what: an API key (`key`), a browser session made from one (`session`),
 * or a conversation-scoped key (`conversation`), valid only on its conversation's routes.
 */
export type Principal =
  | { via: 'key'; userId: string; keyId: string; issuedAt: string }
  | { via: 'session'; userId: string; keyId?: string; sessionId: string; issuedAt: string }
  | { via: 'conversation'; userId: string; conversationId: string };

/** A browser session: only the SHA-256 of its token is kept, and it ends at `expiresAt`. */
export interface SessionRecord {
  sessionId: string;
  userId: string;
  /** The API key it was made from (revoking that key ends the session too); none for an OpenID sign-in. */
  keyId?: string;
  hash: string;
  createdAt: string;
  expiresAt: string;
}
