import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import type { ConversationRecord } from '#shared/conversations/model.ts';
import { conflict } from '#shared/http/errors.ts';

/**
 * The conversation record logic every audience shares: the user's API (rename, revoke its key, place
 * it on a sandbox) and the bridge (a sandbox's status reports) change a record the same way.
 */
export class ConversationRecords {
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
