import type { ApiKeyRecord } from '#shared/auth/model.ts';

/** Storage of API key records. Adapters: `DynamoKeyStore`. */
export interface KeyStore {
  /** Stores a new record; fails if the key id exists. */
  create(record: ApiKeyRecord): Promise<void>;
  /** The record, or undefined when there is none. */
  get(keyId: string): Promise<ApiKeyRecord | undefined>;
  /** A user's keys, oldest first (a Query on the user index). */
  listByUser(userId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked; false when there is no such key or it was revoked already. */
  revoke(keyId: string, at: string): Promise<boolean>;
  /** Records use; a no-op if the key is gone. */
  touch(keyId: string, at: string): Promise<void>;
}
