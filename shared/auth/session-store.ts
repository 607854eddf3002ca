import type { SessionRecord } from '#shared/auth/model.ts';

/** Storage of browser sessions. Adapters: `DynamoSessionStore` (in the keys table). */
export interface SessionStore {
  create(record: SessionRecord): Promise<void>;
  /** The record, or undefined when there is none (expired ones included: the caller checks). */
  get(sessionId: string): Promise<SessionRecord | undefined>;
  /** Removes it; a no-op when it is gone. */
  delete(sessionId: string): Promise<void>;
}
