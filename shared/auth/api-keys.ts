import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { keyRecordCache, type KeyRecordCache } from '#shared/auth/key-cache.ts';
import type { KeyStore } from '#shared/auth/key-store.ts';
import type { ApiKeyInfo, ApiKeyRecord, Principal } from '#shared/auth/model.ts';
import { conflict } from '#shared/http/errors.ts';
import { logger } from '#shared/logging.ts';

/**
 * Keys look like `acs_<key id>_<secret>`. The key id lets the authorizer find the record with one
 * GetItem; the record holds only the SHA-256 of the whole key, compared in constant time.
 */
const KEY_PATTERN = /^acs_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** Active keys a user may hold when creating them over the API (the CLI is not limited). */
export const MAX_KEYS_PER_USER = 50;

/** A key as `GET /api/keys` shows it: never the key or its hash. */
export const keyView = (k: ApiKeyInfo) => ({
  id: k.keyId,
  name: k.name,
  prefix: `acs_${k.keyId}`,
  created_at: k.createdAt,
  last_used_at: k.lastUsedAt ?? null,
  expires_at: k.expiresAt ?? null,
});

/** Skip the last-used write when the stored time is this fresh, so a busy key is not a write per request. */
const TOUCH_INTERVAL_MS = 5 * 60_000;

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

const info = ({ hash: _hash, ...rest }: ApiKeyRecord): ApiKeyInfo => rest;

export class ApiKeys {
  constructor(
    private readonly store: KeyStore,
    private readonly now: () => Date = () => new Date(),
    /** Records the authorizer read lately (see KEY_CACHE_SECONDS): the process's own unless a test gives one. */
    private readonly cache: KeyRecordCache = keyRecordCache,
    /** Told when an expired key is presented by its holder (the audit log's `key_expired`); at most once per key per process. */
    private readonly onExpired?: (record: ApiKeyRecord) => Promise<void>,
  ) {}

  /** Keys whose expiry this process has reported already. */
  private readonly reported = new Set<string>();

  /** Issues a key. The returned `key` is shown once; only its hash is kept. */
  async create(userId: string, name: string, expiresAt?: string): Promise<{ key: string; record: ApiKeyInfo }> {
    const keyId = randomBytes(8).toString('hex');
    const key = `acs_${keyId}_${randomBytes(32).toString('base64url')}`;
    const record: ApiKeyRecord = {
      keyId,
      userId,
      name,
      hash: hashKey(key),
      createdAt: this.now().toISOString(),
      ...(expiresAt ? { expiresAt } : {}),
    };
    await this.store.create(record);
    return { key, record: info(record) };
  }

  /** `POST /api/keys`: a key for the caller, within MAX_KEYS_PER_USER active keys. */
  async createOwn(userId: string, name: string, expiresAt?: string) {
    const active = (await this.store.listByUser(userId)).filter((k) => !k.revokedAt);
    if (active.length >= MAX_KEYS_PER_USER)
      throw conflict(`You have ${MAX_KEYS_PER_USER} active keys; delete one first`);
    const { key, record } = await this.create(userId, name, expiresAt);
    return { ...keyView(record), key };
  }

  /** `GET /api/keys`: the caller's active keys, oldest first. */
  async listActive(userId: string) {
    const now = this.now().toISOString();
    return (await this.list(userId)).filter((k) => !k.revokedAt && !(k.expiresAt && k.expiresAt <= now)).map(keyView);
  }

  async list(userId: string): Promise<ApiKeyInfo[]> {
    return (await this.store.listByUser(userId)).map(info);
  }

  async revoke(keyId: string): Promise<boolean> {
    this.cache.forget(keyId);
    const revoked = await this.store.revoke(keyId, this.now().toISOString());
    // Again after the write: a request between the two may have read the record still active.
    this.cache.forget(keyId);
    return revoked;
  }

  /** Revokes one of the user's own keys; false when it is unknown, another user's or revoked already. */
  async revokeOwn(userId: string, keyId: string): Promise<boolean> {
    const record = await this.store.get(keyId);
    if (!record || record.userId !== userId || record.revokedAt) return false;
    return this.revoke(keyId);
  }

  /** Whether the key still works (a session made from it lives only as long as the key). */
  async isActive(keyId: string): Promise<boolean> {
    const record = await this.recent(keyId);
    return !!record && !record.revokedAt && !this.expired(record);
  }

  /** The key's record as read within KEY_CACHE_SECONDS, or from the store (then held). */
  private async recent(keyId: string): Promise<ApiKeyRecord | undefined> {
    const held = this.cache.get(keyId);
    if (held) return held;
    const record = await this.store.get(keyId);
    if (record) this.cache.put(record);
    return record;
  }

  /** The key's owner, or null for a malformed, unknown or revoked key. */
  async authenticate(key: string | undefined): Promise<Principal | null> {
    const match = key ? KEY_PATTERN.exec(key) : null;
    if (!key || !match) return null;
    const record = await this.recent(match[1]!);
    if (!record || record.revokedAt) return null;
    // Always against the record's hash, cached or not: a held record admits only its own key.
    const expected = Buffer.from(record.hash, 'hex');
    const actual = Buffer.from(hashKey(key), 'hex');
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
    // Expiry is read from the record each time, cached or not: an expired key is refused at once.
    // Reported only for the real key: a guess at a key id writes nothing.
    if (this.expired(record)) {
      if (this.onExpired && !this.reported.has(record.keyId)) {
        this.reported.add(record.keyId);
        // The refusal stands whatever becomes of the report (the next process to see the key tries again).
        await this.onExpired(record).catch((error: unknown) =>
          logger.warn('keys.expiry-not-recorded', { keyId: record.keyId, error: error as Error }),
        );
      }
      return null;
    }
    const now = this.now();
    if (!record.lastUsedAt || now.getTime() - Date.parse(record.lastUsedAt) > TOUCH_INTERVAL_MS) {
      await this.store.touch(record.keyId, now.toISOString());
      this.cache.update(record.keyId, { lastUsedAt: now.toISOString() });
    }
    return { via: 'key', userId: record.userId, keyId: record.keyId, issuedAt: record.createdAt };
  }

  private expired(record: ApiKeyRecord): boolean {
    return !!record.expiresAt && Date.parse(record.expiresAt) <= this.now().getTime();
  }
}

/** The key a request carries: `X-Session-API-Key`, or else `Authorization: Bearer <key>`. */
export function keyFromHeaders(headers: Record<string, string | undefined>): string | undefined {
  const lower: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  const direct = lower['x-session-api-key']?.trim();
  if (direct) return direct;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(lower.authorization ?? '');
  return bearer?.[1];
}
