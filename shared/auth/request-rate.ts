/**
 * Authenticated requests per user per minute (the plan's `requests_per_user_per_minute`), counted in
 * the process that authorizes: exact behind the local gateway, per authorizer container on AWS (so a
 * user whose requests spread over N warm containers may reach N times the rate: approximate, and
 * documented in shared/plans/README.md). A token bucket per user that holds one minute's worth and
 * refills continuously; no database request.
 */
export class RequestRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly now: () => number = Date.now,
    /** Users tracked at once; the least recently seen is forgotten beyond it (a fresh bucket is full). */
    private readonly maxUsers = 10_000,
  ) {}

  /** Takes one request of `userId` under `perMinute`; undefined when allowed, else the seconds until one is. */
  take(userId: string, perMinute: number): number | undefined {
    const at = this.now();
    const held = this.buckets.get(userId);
    const perMs = perMinute / 60_000;
    const tokens = held ? Math.min(perMinute, held.tokens + (at - held.at) * perMs) : perMinute;
    // Re-inserted, so the map's order is least recently seen first.
    this.buckets.delete(userId);
    if (this.buckets.size >= this.maxUsers) this.buckets.delete(this.buckets.keys().next().value!);
    if (tokens < 1) {
      this.buckets.set(userId, { tokens, at });
      return (1 - tokens) / perMs / 1000;
    }
    this.buckets.set(userId, { tokens: tokens - 1, at });
    return undefined;
  }
}

/** The process's (the container's) counts. */
export const requestRate = new RequestRate();
