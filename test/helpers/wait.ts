/** How `waitFor` polls: `until` the value is good enough (default: defined), at most `timeoutMs`. */
export interface WaitOptions<T> {
  /** Whether the value read is the one waited for; default: it is not undefined. */
  until?: (value: T) => boolean;
  /** A bound on a wait for something else to happen, not a timing assertion. */
  timeoutMs?: number;
  intervalMs?: number;
}

/** A wait that ran out of time, with the last value read (a caller may report it its own way). */
export class WaitTimeout extends Error {
  constructor(
    what: string,
    readonly last: unknown,
  ) {
    super(`Timed out waiting for ${what}; last value: ${JSON.stringify(last)?.slice(0, 2000)}`);
  }
}

/**
 * The one poller of the tests: reads `read` every `intervalMs` until the value satisfies `until`,
 * and returns it; after `timeoutMs` fails naming `what` and the last value read. A `read` that throws
 * ends the wait at once.
 */
export async function waitFor<T>(
  what: string,
  read: () => Promise<T> | T,
  { until = (v) => v !== undefined, timeoutMs = 30_000, intervalMs = 100 }: WaitOptions<T> = {},
): Promise<Exclude<T, undefined>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (until(value)) return value as Exclude<T, undefined>;
    if (Date.now() > deadline) throw new WaitTimeout(what, value);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * `waitFor` for a condition held in memory (a counter, a status another activity sets): true once it
 * holds. Such a check costs nothing, so it is polled every 10 ms by default.
 */
export async function waitUntil(
  what: string,
  holds: () => boolean,
  { timeoutMs = 20_000, intervalMs = 10 }: Omit<WaitOptions<boolean>, 'until'> = {},
): Promise<void> {
  await waitFor(what, holds, { until: (held) => held, timeoutMs, intervalMs });
}
