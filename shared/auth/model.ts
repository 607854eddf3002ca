import * as z from 'zod';

/** User ids are chosen by whoever issues keys; this keeps them safe in paths, logs and keys. */
export const userIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/, 'user id: 1-128 of A-Z a-z 0-9 . _ @ -, starting with a letter or digit');

export interface ApiKeyRecord {
  keyId: string;
  userId: string;
  name: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  hash: string;
  createdAt: string;
  lastUsedAt?: string;
  revokedAt?: string;
}

/** What a caller sees of a key: never the hash. */
export type ApiKeyInfo = Omit<ApiKeyRecord, 'hash'>;

export interface Principal {
  userId: string;
  keyId: string;
}
