import type { AgentEvent } from '#sandbox/agent/events.ts';

export interface EventSinkOptions {
  /**
   * Posts one batch numbered from `firstSeq` (the sandbox's control-plane client does). It rejects
   * with an error carrying the HTTP `status` when the receiver answered other than 2xx.
   */
  deliver: (firstSeq: number, batch: AgentEvent[], timeoutMs: number) => Promise<void>;
  /** A batch is posted once it holds this many events (default 10)... */
  batchSize?: number;
  /** ...or this long after its first event arrived (default 1000 ms). */
  flushIntervalMs?: number;
  /** Tries per post (default 3), with exponential back-off from `backoffMs` (default 250 ms). */
  attempts?: number;
  backoffMs?: number;
  /** Per attempt (default 10 s). */
  requestTimeoutMs?: number;
  /** Events kept while the receiver is unreachable; beyond it the oldest are dropped (default 10,000). */
  maxBuffered?: number;
  /** Told about a batch that could not be delivered (kept for later, or dropped when refused). */
  onError?: (message: string) => void;
  /** The sequence number of the first event this sink delivers (default 1; a resumed conversation continues). */
  firstSeq?: number;
  /** Told the number the next event will take, after each delivered batch (to persist across a restart). */
  onDelivered?: (nextSeq: number) => void;
}

/** The receiver refused the batch for good (a 4xx other than 408/429): retrying cannot help. */
class Refused extends Error {}

/**
 * Delivers agent events to the control plane in batches: at most one post in flight, so batches
 * arrive in order. A post is retried with back-off; a batch that still fails stays at the head of the
 * queue and goes again at the next flush, so a control plane that is down for a while loses nothing
 * (within `maxBuffered`).
 *
 * Every event has a sequence number, contiguous from `firstSeq`: the queue's head is `#headSeq`, and
 * a batch is posted with `first_seq`. A retry repeats the same numbers with the same events, so the
 * receiver stores it once. Numbers never leave a gap (a reader would stop at it for good): overflow drops
 * only events never sent, and a refused batch (nothing stored) gives its numbers to the events after it.
 */
export class EventSink {
  readonly #o: Required<Omit<EventSinkOptions, 'onError' | 'onDelivered'>> &
    Pick<EventSinkOptions, 'onError' | 'onDelivered'>;
  #queue: AgentEvent[] = [];
  /** The number of `#queue[0]`. */
  #headSeq: number;
  /** How many events at the head have been sent at least once (their numbers are fixed). */
  #sent = 0;
  #timer: NodeJS.Timeout | null = null;
  #inFlight: Promise<void> | null = null;
  #closed = false;

  constructor(options: EventSinkOptions) {
    this.#o = {
      batchSize: 10,
      flushIntervalMs: 1000,
      attempts: 3,
      backoffMs: 250,
      requestTimeoutMs: 10_000,
      maxBuffered: 10_000,
      firstSeq: 1,
      ...options,
    };
    this.#headSeq = this.#o.firstSeq;
  }

  /** Queues events; a full batch is posted at once, a partial one after the flush interval. */
  push(events: AgentEvent[]): Promise<void> {
    if (this.#closed) throw new Error('The event sink is closed.');
    this.#queue.push(...events);
    const over = this.#queue.length - this.#o.maxBuffered;
    if (over > 0) {
      const dropped = this.#queue.splice(this.#sent, over).length;
      this.#o.onError?.(`${dropped} events were dropped: the receiver has been unreachable and the buffer is full.`);
    }
    if (this.#queue.length >= this.#o.batchSize) void this.#drain(false);
    else this.#timer ??= setTimeout(() => void this.#drain(true), this.#o.flushIntervalMs);
    return Promise.resolve();
  }

  /** Posts everything queued now; resolves when done (or when what failed was put back). */
  async flush(): Promise<void> {
    while (this.#inFlight) await this.#inFlight;
    await this.#drain(true);
    while (this.#inFlight) await this.#inFlight;
  }

  /** Flushes, then refuses further events. */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
  }

  /** Events not delivered yet. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Posts full batches; with `all`, the partial one at the end too. */
  #drain(all: boolean): Promise<void> {
    if (all && this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#inFlight) return this.#inFlight;
    if (!this.#queue.length) return Promise.resolve();
    this.#inFlight = (async () => {
      try {
        while (this.#queue.length >= this.#o.batchSize || (all && this.#queue.length)) {
          const batch = this.#queue.slice(0, this.#o.batchSize);
          this.#sent = Math.max(this.#sent, batch.length);
          try {
            await this.#post(this.#headSeq, batch);
            this.#queue.splice(0, batch.length);
            this.#sent -= batch.length;
            this.#headSeq += batch.length;
            this.#o.onDelivered?.(this.#headSeq);
          } catch (err) {
            if (err instanceof Refused) {
              this.#queue.splice(0, batch.length);
              this.#sent -= batch.length;
              this.#o.onError?.(`${batch.length} events were refused and dropped: ${err.message}`);
              continue;
            }
            this.#o.onError?.(`${batch.length} events could not be delivered yet: ${(err as Error).message}`);
            break;
          }
        }
      } finally {
        this.#inFlight = null;
        // What failed waits for the next tick of the interval rather than spinning.
        if (this.#queue.length && !this.#closed)
          this.#timer ??= setTimeout(() => void this.#drain(true), this.#o.flushIntervalMs);
      }
    })();
    return this.#inFlight;
  }

  async #post(firstSeq: number, batch: AgentEvent[]): Promise<void> {
    let lastError: Error = new Error('not sent');
    let wait = 0;
    for (let attempt = 0; attempt < this.#o.attempts; attempt++) {
      // Back-off, or longer when the receiver said when to come back (a 429's Retry-After).
      if (attempt) await new Promise((r) => setTimeout(r, Math.max(wait, this.#o.backoffMs * 2 ** (attempt - 1))));
      try {
        return await this.#o.deliver(firstSeq, batch, this.#o.requestTimeoutMs);
      } catch (err) {
        const status = (err as { status?: unknown }).status;
        if (typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 429)
          throw new Refused((err as Error).message);
        const after = (err as { retryAfterMs?: unknown }).retryAfterMs;
        wait = typeof after === 'number' ? after : 0;
        lastError = err as Error;
      }
    }
    throw lastError;
  }
}
