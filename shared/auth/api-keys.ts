import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { KeyStore } from '#shared/auth/key-store.ts';
import type { ApiKeyInfo, ApiKeyRecord, Principal } from '#shared/auth/model.ts';

/**
 * Keys look like `acs_<key id>_<secret>`. The key id lets the authorizer find the record with one
 * GetItem; the record holds only the SHA-256 of the whole key, compared in constant time.
 */
const KEY_PATTERN = /^acs_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** Skip the last-used write when the stored time is this fresh, so a busy key is not a write per request. */
const TOUCH_INTERVAL_MS = 5 * 60_000;

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

const info = ({ hash: _hash, ...rest }: ApiKeyRecord): ApiKeyInfo => rest;

export class ApiKeys {
  constructor(
    private readonly store: KeyStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Issues a key. The returned `key` is shown once; only its hash is kept. */
  async create(userId: string, name: string): Promise<{ key: string; record: ApiKeyInfo }> {
    const keyId = randomBytes(8).toString('hex');
    const key = `acs_${keyId}_${randomBytes(32).toString('base64url')}`;
    const record: ApiKeyRecord = { keyId, userId, name, hash: hashKey(key), createdAt: this.now().toISOString() };
    await this.store.create(record);
    return { key, record: info(record) };
  }

  async list(userId: string): Promise<ApiKeyInfo[]> {
    return (await this.store.listByUser(userId)).map(info);
  }

  async revoke(keyId: string): Promise<boolean> {
    return this.store.revoke(keyId, this.now().toISOString());
  }

  /** The key's owner, or null for a malformed, unknown or revoked key. */
  async authenticate(key: string | undefined): Promise<Principal | null> {
    const match = key ? KEY_PATTERN.exec(key) : null;
    if (!key || !match) return null;
    const record = await this.store.get(match[1]!);
    if (!record || record.revokedAt) return null;
    const expected = Buffer.from(record.hash, 'hex');
    const actual = Buffer.from(hashKey(key), 'hex');
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
    const now = this.now();
    if (!record.lastUsedAt || now.getTime() - Date.parse(record.lastUsedAt) > TOUCH_INTERVAL_MS) {
      await this.store.touch(record.keyId, now.toISOString());
    }
    return { userId: record.userId, keyId: record.keyId };
  }
}

/** The key a request carries: `X-Session-API-Key`, or else `Authorization: Bearer <key>`. */
export function keyFromHeaders(headers: Record<string, string | undefined>): string | undefined {
  const lower: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  const direct = lower['x-session-api-key']?.trim();
  if (direct) return direct;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(lower['authorization'] ?? '');
  return bearer?.[1];
}
