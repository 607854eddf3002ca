import type { ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import { queued, type ConversationCommand, type ConversationRecord } from '#shared/conversations/model.ts';
import { normalizeId, ownedConversation, ownedSandbox } from '#shared/conversations/owned.ts';
import type { SandboxQueue } from '#shared/sandboxes/queue.ts';
import type { VersionedConversationUpdate } from '#shared/conversations/versioned-update.ts';
import { conflict, notFound } from '#shared/http/errors.ts';

/** What the commands are built on. */
export interface ConversationCommandDeps {
  conversations: ConversationStore;
  sandboxes: Pick<SandboxQueue, 'statuses' | 'enqueueCommand'>;
  keys: ConversationKeys;
  versioned: VersionedConversationUpdate;
}

/**
 * What an owner tells a conversation through the V1 API, the agent-server routes and the stream:
 * a message, pause, run, a confirmation's answer (each a command to its sandbox), and a new key.
 */
export class ConversationCommands {
  constructor(private readonly d: ConversationCommandDeps) {}

  /** Relays a command to the conversation's sandbox (queued while the sandbox is paused or starting). */
  async command(
    userId: string,
    conversationId: string,
    make: (id: string) => ConversationCommand,
  ): Promise<{ success: true }> {
    const conversation = await this.d.conversations.get(userId, normalizeId(conversationId));
    if (!conversation) throw notFound('Conversation not found');
    if (!conversation.sandbox_id) throw conflict('The conversation has no sandbox yet; wait for its start task');
    const sandbox = await ownedSandbox(this.d.sandboxes, userId, conversation.sandbox_id);
    if (!sandbox || sandbox.status === 'ERROR' || sandbox.status === 'MISSING') {
      throw conflict(`The conversation's sandbox is ${sandbox?.status ?? 'MISSING'}; start a new conversation`);
    }
    await this.d.sandboxes.enqueueCommand(userId, sandbox.id, queued(make(conversation.id)));
    return { success: true };
  }

  /** Revokes every conversation-scoped key handed out for the conversation; returns the new one (GETs show it too). */
  async revokeKey(userId: string, conversationId: string): Promise<{ session_api_key: string }> {
    const rec = await ownedConversation(this.d.conversations, userId, conversationId);
    await this.d.versioned.update(userId, rec.id, (r: ConversationRecord) => ({ keyVersion: (r.keyVersion ?? 1) + 1 }));
    return {
      session_api_key: await this.d.keys.forRecord(await ownedConversation(this.d.conversations, userId, rec.id)),
    };
  }
}
