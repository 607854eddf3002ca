import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import type { EventStore } from '#shared/events/event-store.ts';
import { logger } from '#shared/logging.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import type { EventFeed } from '#shared/stream/feed.ts';

/** Why a sandbox was paused at a plan's hard limit: the limit's code, its value and what was used (402's members). */
export interface PauseReason {
  code: string;
  limit: number;
  used: number;
  detail: string;
}

/**
 * Tells a sandbox's conversations why it was paused at a hard limit (monthly spend, sandbox hours,
 * credits: docs/billing.md, "Plans and limits"): one `ConversationErrorEvent` each, appended after its
 * committed events (the program is stopping, so nothing of its own follows), with the limit's code,
 * value and use, and pushed to live streams. Its id is the sandbox's generation's, so each says it once.
 * Finding them reads the user's conversations a page at a time (conversations are stored per user and
 * name their sandbox): only at such a pause, a few times a month at most.
 */
export class PauseNotices {
  constructor(
    private readonly conversations: ConversationStore,
    private readonly events: EventStore,
    private readonly feed: EventFeed,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Appends the event to each conversation on the sandbox; how many were told. */
  async paused(sandbox: { id: string; userId: string; generation: number }, why: PauseReason): Promise<number> {
    let told = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.conversations.list(sandbox.userId, {}, 100, startKey);
      for (const c of page.items)
        if (c.sandbox_id === sandbox.id && (await this.tell(c.userId, c.id, sandbox, why))) told++;
      startKey = page.lastKey;
    } while (startKey);
    return told;
  }

  private async tell(
    userId: string,
    conversationId: string,
    sandbox: { id: string; generation: number },
    why: PauseReason,
  ): Promise<boolean> {
    const ref = { userId, conversationId };
    const event = {
      kind: 'ConversationErrorEvent',
      id: `limit-${sandbox.id.slice(0, 40)}-${sandbox.generation}`,
      timestamp: this.now().toISOString(),
      source: 'environment',
      code: why.code,
      detail: why.detail,
      limit: why.limit,
      used: why.used,
    } as unknown as AgentEventEnvelope;
    try {
      // A batch of the program's that was in flight may take the next number first: then after it.
      for (let attempt = 0; attempt < 3; attempt++) {
        const end = await this.events.lastSeq(ref);
        const out = await this.events.append(ref, end + 1, [event], end);
        if (out.added > 0) {
          await this.feed.committed(ref, out.lastSeq).catch(() => {});
          return true;
        }
      }
    } catch (err) {
      logger.warn('conversation.limit-event-failed', { conversationId, error: err as Error });
    }
    return false;
  }
}
