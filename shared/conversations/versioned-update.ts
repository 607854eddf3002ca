import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import { conflict } from '#shared/http/errors.ts';

/**
 * A conversation record's one update: read, change, write under the record's version condition, retried
 * on a lost race. Every audience changes a record this way: the user's APIs (rename, revoke its key) and
 * the bridge (a sandbox's status reports).
 */
export class VersionedConversationUpdate {
  constructor(
    private readonly conversations: ConversationStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Read-modify-write of a conversation under its version condition, retried on a lost race. */
  async update(
    userId: string,
    id: string,
    changes: Partial<ConversationRecord> | ((rec: ConversationRecord) => Partial<ConversationRecord>),
  ): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const rec = await this.conversations.get(userId, id);
      if (!rec) return;
      const delta = typeof changes === 'function' ? changes(rec) : changes;
      if (await this.conversations.update(userId, id, rec.version, { ...delta, updatedAt: this.now().toISOString() }))
        return;
    }
    throw conflict('The conversation was changed concurrently; try again');
  }
}
