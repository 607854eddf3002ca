import { describe, expect, it } from 'vitest';
import { RequestRate } from '#shared/auth/request-rate.ts';

describe('RequestRate: requests per user per minute, a token bucket per user', () => {
  it('allows one minute of requests at once, then one per 60/rate seconds, and says how long to wait', () => {
    let now = 0;
    const rate = new RequestRate(() => now);
    for (let i = 0; i < 6; i++) expect(rate.take('u', 6)).toBeUndefined();
    expect(rate.take('u', 6)).toBeCloseTo(10, 5);
    // A refused request takes nothing: the wait shrinks as time passes.
    now = 4_000;
    expect(rate.take('u', 6)).toBeCloseTo(6, 5);
    now = 10_000;
    expect(rate.take('u', 6)).toBeUndefined();
    expect(rate.take('u', 6)).toBeCloseTo(10, 5);
  });

  it('keeps users apart, and never holds more than a minute of requests however long a user was away', () => {
    let now = 0;
    const rate = new RequestRate(() => now);
    for (let i = 0; i < 3; i++) rate.take('a', 3);
    expect(rate.take('a', 3)).toBeDefined();
    expect(rate.take('b', 3)).toBeUndefined();
    now = 3_600_000;
    for (let i = 0; i < 3; i++) expect(rate.take('a', 3)).toBeUndefined();
    expect(rate.take('a', 3)).toBeDefined();
  });

  it('tracks a bounded number of users: the least recently seen is forgotten (and starts full again)', () => {
    const rate = new RequestRate(() => 0, 2);
    rate.take('a', 1);
    rate.take('b', 1);
    expect(rate.take('a', 1)).toBeDefined(); // a seen again: now b is the oldest
    rate.take('c', 1); // forgets b
    expect(rate.take('b', 1)).toBeUndefined();
    expect(rate.take('a', 1)).toBeUndefined(); // b's return forgot a
  });
});
