/**
 * Events the local stream sends one user per second, over all of that user's sockets (read from the
 * store and sent: the CPU a replay costs the one process that also serves everyone else). A token
 * bucket: a burst of `burst` goes at once (a client opening one long conversation gets its history
 * without waiting), then `perSecond`. A user looping `resend_all` on many sockets gets that rate and
 * no more, so another tenant's requests keep their latency (bench/neighbours.ts measures it).
 */
export class SendPacer {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly perSecond = 2_000,
    readonly burst = 20_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes `n` events of `userId`'s; resolves when they may go (at once while the bucket holds them). */
  async take(userId: string, n: number): Promise<void> {
    const at = this.now();
    const held = this.buckets.get(userId);
    const tokens = held ? Math.min(this.burst, held.tokens + ((at - held.at) * this.perSecond) / 1000) : this.burst;
    // In debt rather than refused: the wait is what this batch owes, and later ones queue behind it.
    this.buckets.set(userId, { tokens: tokens - n, at });
    if (this.buckets.size > 10_000) this.forgetFull(at);
    if (tokens - n < 0) await new Promise((r) => setTimeout(r, ((n - tokens) * 1000) / this.perSecond));
  }

  /** Drops users whose buckets have refilled: they are as if never seen. */
  private forgetFull(at: number): void {
    for (const [user, b] of this.buckets)
      if (b.tokens + ((at - b.at) * this.perSecond) / 1000 >= this.burst) this.buckets.delete(user);
  }
}
