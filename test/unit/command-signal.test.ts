import { afterEach, describe, expect, it, vi } from 'vitest';
import { commandQueued, commandQueuedOrTimeout } from '#shared/sandboxes/command-signal.ts';

/** Whether the promise has settled, after letting pending callbacks run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await Promise.resolve();
  await Promise.resolve();
  return done;
}

describe('command long-poll wake-up (one process)', () => {
  afterEach(() => vi.useRealTimers());

  it("wakes a waiting poll when its sandbox's command is queued, not another sandbox's", async () => {
    vi.useFakeTimers();
    const a = commandQueuedOrTimeout('sbx-a', 60_000);
    const alsoA = commandQueuedOrTimeout('sbx-a', 60_000);
    const b = commandQueuedOrTimeout('sbx-b', 60_000);
    commandQueued('sbx-c');
    expect(await settled(a)).toBe(false);
    commandQueued('sbx-a');
    expect(await settled(a)).toBe(true);
    expect(await settled(alsoA)).toBe(true);
    expect(await settled(b)).toBe(false);
    // A later queueing finds no one waiting on a: nothing left behind to wake.
    commandQueued('sbx-a');
    vi.advanceTimersByTime(60_000);
    expect(await settled(b)).toBe(true);
  });

  it('without a command, the wait ends at its interval', async () => {
    vi.useFakeTimers();
    const p = commandQueuedOrTimeout('sbx-quiet', 200);
    vi.advanceTimersByTime(199);
    expect(await settled(p)).toBe(false);
    vi.advanceTimersByTime(1);
    expect(await settled(p)).toBe(true);
  });
});
