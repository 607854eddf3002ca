import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import type { ConversationRecord, SandboxSummary } from '#shared/conversations/model.ts';
import { notFound } from '#shared/http/errors.ts';
import type { SandboxQueue } from '#shared/sandboxes/queue.ts';

/**
 * Lookups the conversation services (the V1 API's reads and commands, `reads.ts` and `commands.ts`; the
 * legacy one, `legacy-service.ts`) make of the caller's own records: functions over the store, so none
 * carries another.
 */

/** A conversation id as any client sends it (dashes, upper case) in the form the stores key on. */
export const normalizeId = (id: string) => id.replaceAll('-', '').toLowerCase();

/** The caller's conversation by id; 404 otherwise. */
export async function ownedConversation(
  store: ConversationStore,
  userId: string,
  conversationId: string,
): Promise<ConversationRecord> {
  const rec = await store.get(userId, normalizeId(conversationId));
  if (!rec) throw notFound('Conversation not found');
  return rec;
}

/** The caller's conversation records by id, in request order (null for one not theirs). */
export async function ownedConversations(
  store: ConversationStore,
  userId: string,
  ids: string[],
): Promise<(ConversationRecord | null)[]> {
  const normalized = ids.map(normalizeId);
  const found = await store.getMany(userId, normalized);
  return normalized.map((id) => found.get(id) ?? null);
}

/** The user's sandbox's status; undefined when unknown, deleted or another user's. */
export async function ownedSandbox(
  sandboxes: Pick<SandboxQueue, 'statuses'>,
  userId: string,
  sandboxId: string,
): Promise<SandboxSummary | undefined> {
  const found = (await sandboxes.statuses([sandboxId])).get(sandboxId);
  return found?.userId === userId ? found : undefined;
}

/** The current key version of a user's conversation, for `ConversationKeys` (undefined: gone or not theirs). */
export const conversationKeyVersion =
  (store: ConversationStore) =>
  async (userId: string, conversationId: string): Promise<number | undefined> => {
    const rec = await store.get(userId, conversationId);
    return rec ? (rec.keyVersion ?? 1) : undefined;
  };
