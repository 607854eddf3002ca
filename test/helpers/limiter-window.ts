/** The sign-in limiter's window (a fixed minute): attempts in one window share its counts. */
export const limiterMinute = (nowMs = Date.now()) => Math.floor(nowMs / 60_000);

/** Whole seconds left in the limiter's minute at `nowMs` (worked out here, not by the code under test). */
const leftInMinute = (nowMs: number) => 60 - (Math.floor(nowMs / 1000) % 60);

/**
 * A refusal's `Retry-After`, answered between `sinceMs` and now within one limiter minute: the seconds
 * that were left in that minute when it was answered, so within what was left then and what is left now.
 */
export function expectRetryAfterInWindow(header: string | string[] | null | undefined, sinceMs: number): void {
  const seconds = Number(header);
  const [latest, earliest] = [leftInMinute(Date.now()), leftInMinute(sinceMs)];
  if (!(seconds >= latest && seconds <= earliest))
    throw new Error(`Retry-After ${header}: expected the seconds left in the minute, ${latest} to ${earliest}`);
}
