import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTables, startDynalite, useLocalTables, type EmbeddedDynamo } from '#infra/local/dynamo.ts';
import { ApiKeys } from '#shared/auth/api-keys.ts';
import { DynamoKeyStore } from '#shared/auth/dynamo-key-store.ts';
import { KEY_CACHE_SECONDS, KeyRecordCache } from '#shared/auth/key-cache.ts';

let dynamo: EmbeddedDynamo;

beforeAll(async () => {
  dynamo = await startDynalite();
  useLocalTables(dynamo.endpoint, 'key-cache');
  await createTables(dynamo.endpoint, 'key-cache');
});
afterAll(() => dynamo.close());

/** The real store on dynalite, counting the reads the authorizer makes. */
class CountingKeyStore extends DynamoKeyStore {
  reads = 0;
  touches = 0;
  override get(keyId: string) {
    this.reads++;
    return super.get(keyId);
  }
  override touch(keyId: string, at: string) {
    this.touches++;
    return super.touch(keyId, at);
  }
}

/** An authorizer's ApiKeys and an operator's (another process: its own cache), one clock they share. */
function world() {
  let now = Date.parse('2026-11-22T10:00:00Z');
  const clock = { advance: (ms: number) => (now += ms) };
  const store = new CountingKeyStore();
  const authorizer = new ApiKeys(store, () => new Date(now), new KeyRecordCache(KEY_CACHE_SECONDS * 1000, () => now));
  const operator = new ApiKeys(
    new DynamoKeyStore(),
    () => new Date(now),
    new KeyRecordCache(KEY_CACHE_SECONDS * 1000, () => now),
  );
  return { store, authorizer, operator, clock };
}

describe('the authorizer key cache', () => {
  it('reads a busy key once per KEY_CACHE_SECONDS, and stamps its last use once', async () => {
    const { store, authorizer, operator, clock } = world();
    const { key } = await operator.create('cache-busy', 'k');
    for (let i = 0; i < 5; i++) expect(await authorizer.authenticate(key)).toMatchObject({ userId: 'cache-busy' });
    expect(store.reads).toBe(1);
    expect(store.touches).toBe(1);
    clock.advance(KEY_CACHE_SECONDS * 1000);
    expect(await authorizer.authenticate(key)).toMatchObject({ userId: 'cache-busy' });
    expect(store.reads).toBe(2);
    expect(store.touches).toBe(1);
  });

  it('refuses a key revoked elsewhere once the bound has passed, and a cached revocation at once', async () => {
    const { authorizer, operator, clock } = world();
    const { key, record } = await operator.create('cache-revoked', 'k');
    expect(await authorizer.authenticate(key)).not.toBeNull();
    expect(await operator.revoke(record.keyId)).toBe(true);
    // Within the bound the authorizer's copy may still admit it: that is the documented delay, no more.
    clock.advance(KEY_CACHE_SECONDS * 1000 - 1);
    expect(await authorizer.authenticate(key)).not.toBeNull();
    clock.advance(1);
    expect(await authorizer.authenticate(key)).toBeNull();
    expect(await authorizer.isActive(record.keyId)).toBe(false);
    // The revoked record is held now: still refused for the rest of the window and after it.
    clock.advance(KEY_CACHE_SECONDS * 1000 + 5);
    expect(await authorizer.authenticate(key)).toBeNull();
  });

  it('drops its copy when the revocation runs in the same process', async () => {
    const { store, authorizer, operator } = world();
    const { key, record } = await operator.create('cache-self', 'k');
    expect(await authorizer.authenticate(key)).not.toBeNull();
    expect(await authorizer.revoke(record.keyId)).toBe(true);
    expect(await authorizer.authenticate(key)).toBeNull();
    expect(store.reads).toBe(2);
  });

  it('never lets a different key through a cached entry: same key id with another secret, or another id', async () => {
    const { authorizer, operator } = world();
    const { key, record } = await operator.create('cache-owner', 'k');
    const other = await operator.create('cache-intruder', 'k');
    expect(await authorizer.authenticate(key)).toMatchObject({ userId: 'cache-owner', keyId: record.keyId });
    const forged = `acs_${record.keyId}_${'A'.repeat(43)}`;
    expect(await authorizer.authenticate(forged)).toBeNull();
    // The other user's key (its secret with the cached id, and as itself) is judged by its own record.
    expect(await authorizer.authenticate(`acs_${record.keyId}_${other.key.split('_')[2]}`)).toBeNull();
    expect(await authorizer.authenticate(other.key)).toMatchObject({
      userId: 'cache-intruder',
      keyId: other.record.keyId,
    });
    expect(await authorizer.authenticate(key)).toMatchObject({ userId: 'cache-owner' });
  });

  it('does not cache unknown key ids, and holds a bounded number of records', async () => {
    const { store, authorizer } = world();
    const unknown = `acs_${'0'.repeat(16)}_${'B'.repeat(43)}`;
    expect(await authorizer.authenticate(unknown)).toBeNull();
    expect(await authorizer.authenticate(unknown)).toBeNull();
    expect(store.reads).toBe(2);

    const cache = new KeyRecordCache(60_000, () => 0, 2);
    const rec = (keyId: string) => ({ keyId, userId: 'u', name: 'n', hash: 'h', createdAt: '' });
    cache.put(rec('a'));
    cache.put(rec('b'));
    cache.put(rec('c'));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')?.keyId).toBe('b');
    expect(cache.get('c')?.keyId).toBe('c');
  });
});
