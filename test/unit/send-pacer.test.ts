import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SendPacer } from '#shared/stream/send-pacer.ts';

describe("SendPacer: events a user's stream sockets are sent per second, together", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** Whether `p` has settled once the timers have run `ms` further. */
  async function settledAfter(p: Promise<void>, ms: number): Promise<boolean> {
    let done = false;
    void p.then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(ms);
    return done;
  }

  it('lets a burst go at once, then makes the user wait what they owe; other users are not held', async () => {
    const pacer = new SendPacer(1000, 300, Date.now);
    for (let i = 0; i < 3; i++) expect(await settledAfter(pacer.take('hog', 100), 0)).toBe(true);
    // The bucket is empty: the next page of 100 owes 100 ms.
    const owed = pacer.take('hog', 100);
    expect(await settledAfter(owed, 90)).toBe(false);
    expect(await settledAfter(owed, 20)).toBe(true);
    expect(await settledAfter(pacer.take('neighbour', 100), 0)).toBe(true);
  });

  it('queues a user who keeps asking: each page waits behind the debt before it', async () => {
    const pacer = new SendPacer(1000, 100, Date.now);
    await pacer.take('hog', 100);
    const a = pacer.take('hog', 100);
    const b = pacer.take('hog', 100);
    expect(await settledAfter(a, 110)).toBe(true);
    expect(await settledAfter(b, 0)).toBe(false);
    expect(await settledAfter(b, 100)).toBe(true);
  });

  it('refills to the burst, never beyond, however long the user was away', async () => {
    const pacer = new SendPacer(1000, 200, Date.now);
    await vi.advanceTimersByTimeAsync(0);
    expect(await settledAfter(pacer.take('u', 200), 0)).toBe(true);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(await settledAfter(pacer.take('u', 200), 0)).toBe(true);
    expect(await settledAfter(pacer.take('u', 100), 50)).toBe(false);
  });
});
