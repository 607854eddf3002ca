import type { ApiKeyRecord } from '#shared/auth/model.ts';

/**
 * How long an authorizer trusts an API key record it has read. Revoking a key (`DELETE
 * /api/keys/{key_id}`, `npm run keys -- revoke`) is effective everywhere within this time: an
 * authorizer that read the record just before keeps accepting the key until its copy expires.
 * In the process that revokes (the local server), the copy is dropped at once.
 */
export const KEY_CACHE_SECONDS = 30;

/** Records held at most; the oldest read goes first (a flood of key ids cannot grow the process). */
const MAX_ENTRIES = 1000;

/**
 * Key records by key id, each for `ttlMs` after it was read. It holds the record with its hash,
 * never a verdict: every request's key is still hashed and compared with it, so a cached entry
 * admits only the key it was made for. Unknown key ids are not cached.
 */
export class KeyRecordCache {
  private readonly entries = new Map<string, { record: ApiKeyRecord; expires: number }>();

  constructor(
    private readonly ttlMs = KEY_CACHE_SECONDS * 1000,
    private readonly now: () => number = () => Date.now(),
    private readonly maxEntries = MAX_ENTRIES,
  ) {}

  /** The record read less than `ttlMs` ago, or undefined. */
  get(keyId: string): ApiKeyRecord | undefined {
    const entry = this.entries.get(keyId);
    if (!entry) return undefined;
    if (this.now() >= entry.expires) {
      this.entries.delete(keyId);
      return undefined;
    }
    return entry.record;
  }

  /** Holds a record just read from the store for `ttlMs`. */
  put(record: ApiKeyRecord): void {
    this.entries.delete(record.keyId);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(record.keyId, { record, expires: this.now() + this.ttlMs });
  }

  /** Replaces a held record's fields without extending its time (the last-used stamp). */
  update(keyId: string, fields: Partial<ApiKeyRecord>): void {
    const entry = this.entries.get(keyId);
    if (entry) entry.record = { ...entry.record, ...fields };
  }

  forget(keyId: string): void {
    this.entries.delete(keyId);
  }
}

/**
 * The cache of this process: one per Lambda container (module scope outlives an invocation), and
 * one for the local server, whose gateway runs the same authorizer code.
 */
export const keyRecordCache = new KeyRecordCache();
