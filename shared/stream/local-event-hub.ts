import type { ConversationRef, EventPage, EventStore } from '#shared/events/event-store.ts';
import type { EventFeed } from '#shared/stream/feed.ts';
import { streamMessage } from '#shared/stream/messages.ts';
import type { SendPacer } from '#shared/stream/send-pacer.ts';

/** Events read from the store per round: a page, so a long history goes out in bounded reads. */
const PAGE = 100;

/** Where a subscription's messages go: `send` resolves once the message is handed to the socket. */
export interface StreamClient {
  send(message: string): Promise<void>;
  /** Delivery failed (the store or the socket): the connection should end. */
  fail(err: unknown): void;
}

const keyOf = (c: ConversationRef) => `${c.userId}#${c.conversationId}`;

/** A page of a conversation's committed events after `after` (at most `limit`). */
type PageReader = (conversation: ConversationRef, after: number, limit: number) => Promise<EventPage>;

/**
 * One client's place in one conversation: the last sequence number sent (`sent`), the committed
 * end it may go up to (`target`, raised by each notification), and at most one pump at a time.
 * So events go out in order, each once, never past the committed end, whatever order or number
 * of notifications concurrent ingests produce.
 */
export class StreamSubscription {
  private sent = 0;
  private target = 0;
  private ready = false;
  private pumping = false;
  private closed = false;

  constructor(
    private readonly read: PageReader,
    readonly conversation: ConversationRef,
    private readonly client: StreamClient,
    private readonly onClose: (s: StreamSubscription) => void,
    private readonly pacer?: SendPacer,
  ) {}

  /** The last sequence number sent to this client. */
  get position(): number {
    return this.sent;
  }

  /** Starts delivery after `after`, up to the committed end `committedEnd` and whatever is committed later. */
  start(after: number, committedEnd: number): void {
    this.sent = after;
    this.ready = true;
    this.advance(committedEnd);
  }

  /** The conversation is committed up to `lastSeq` (a hint: a smaller one than before changes nothing). */
  advance(lastSeq: number): void {
    if (lastSeq > this.target) this.target = lastSeq;
    if (this.ready && !this.pumping && !this.closed && this.sent < this.target) void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (!this.closed && this.sent < this.target) {
        const limit = Math.min(PAGE, this.target - this.sent);
        await this.pacer?.take(this.conversation.userId, limit);
        if (this.closed) return;
        const page = await this.read(this.conversation, this.sent, limit);
        // Committed numbers are all stored: an empty page here means the store lost them.
        if (page.items.length === 0)
          throw new Error(`Events after ${this.sent} are committed up to ${this.target} but not readable`);
        for (const event of page.items) {
          if (this.closed) return;
          await this.client.send(streamMessage(this.conversation.conversationId, this.sent + 1, event));
          this.sent++;
        }
      }
    } catch (err) {
      if (!this.closed) this.client.fail(err);
      this.close();
    } finally {
      this.pumping = false;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
  }
}

/**
 * The local `EventFeed`: an in-memory hub of the gateway's process (the local bridge route runs in it),
 * waking the subscriptions of a conversation when its events are committed. Each subscription
 * reads what it sends from the store.
 */
export class LocalEventHub implements EventFeed {
  private readonly subscriptions = new Map<string, Set<StreamSubscription>>();
  /**
   * Reads in flight, by conversation, position and size: sockets of one conversation at one place (a
   * user's replays opened together, a live tail) share one read, kept only while it runs (committed
   * events never change, and nothing is held once read).
   */
  private readonly reading = new Map<string, Promise<EventPage>>();
  private readonly read: PageReader = (conversation, after, limit) => {
    const key = `${keyOf(conversation)}:${after}:${limit}`;
    let page = this.reading.get(key);
    if (!page) {
      page = this.events()
        .query(conversation, { descending: false, limit, startKey: { seq: after } })
        .finally(() => this.reading.delete(key));
      this.reading.set(key, page);
    }
    return page;
  };

  /**
   * @param events the event store (a function: built on first use, like every adapter)
   * @param pacer what each user's sockets may be sent per second together (none: unpaced)
   */
  constructor(
    readonly events: () => EventStore,
    private readonly pacer?: SendPacer,
  ) {}

  async committed(conversation: ConversationRef, lastSeq: number): Promise<void> {
    for (const s of this.subscriptions.get(keyOf(conversation)) ?? []) s.advance(lastSeq);
  }

  /**
   * Subscribes `client` to a conversation, from after the position `startAfter` picks given the
   * committed end at this moment. Registered before that end is read, so no commit between the two
   * is missed (an earlier notification only raises the target).
   */
  async subscribe(
    conversation: ConversationRef,
    startAfter: (committedEnd: number) => number,
    client: StreamClient,
  ): Promise<StreamSubscription> {
    const key = keyOf(conversation);
    const subscription = new StreamSubscription(
      this.read,
      conversation,
      client,
      (s) => {
        const set = this.subscriptions.get(key);
        set?.delete(s);
        if (set?.size === 0) this.subscriptions.delete(key);
      },
      this.pacer,
    );
    let set = this.subscriptions.get(key);
    if (!set) {
      set = new Set();
      this.subscriptions.set(key, set);
    }
    set.add(subscription);
    try {
      const end = await this.events().lastSeq(conversation);
      subscription.start(startAfter(end), end);
    } catch (err) {
      subscription.close();
      throw err;
    }
    return subscription;
  }

  /** Open subscriptions (tests, shutdown). */
  get size(): number {
    let n = 0;
    for (const set of this.subscriptions.values()) n += set.size;
    return n;
  }
}
