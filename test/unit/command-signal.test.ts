import { afterEach, describe, expect, it, vi } from 'vitest';
import { armSignal, commandQueued, commandQueuedOrTimeout } from '#shared/sandboxes/command-signal.ts';

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

  it("an armed signal keeps a wake-up that came before its wait (between the poll's read and its wait)", async () => {
    vi.useFakeTimers();
    const signal = armSignal('sbx-armed');
    commandQueued('sbx-armed');
    expect(await settled(signal.wait(60_000))).toBe(true);
    // Used up: the next wait waits for the next signal.
    const second = signal.wait(60_000);
    expect(await settled(second)).toBe(false);
    commandQueued('sbx-armed');
    expect(await settled(second)).toBe(true);
    // Closed, it listens no more: a signal after it ends no wait.
    signal.close();
    commandQueued('sbx-armed');
    const after = armSignal('sbx-armed');
    const third = after.wait(200);
    expect(await settled(third)).toBe(false);
    vi.advanceTimersByTime(200);
    expect(await settled(third)).toBe(true);
    // It tells a wake-up (true) from the end of the interval (false).
    expect(await third).toBe(false);
    commandQueued('sbx-armed');
    expect(await after.wait(60_000)).toBe(true);
    after.close();
  });
});
