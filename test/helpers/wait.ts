/** How `waitFor` polls: `until` the value is good enough (default: defined), at most `timeoutMs`. */
export interface WaitOptions<T> {
  /** Whether the value read is the one waited for; default: it is not undefined. */
  until?: (value: T) => boolean;
  /** A bound on a wait for something else to happen, not a timing assertion. */
  timeoutMs?: number;
  intervalMs?: number;
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
    if (Date.now() > deadline)
      throw new Error(`Timed out waiting for ${what}; last value: ${JSON.stringify(value)?.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
