import { describe, expect, it } from 'vitest';
import { RequestRate } from '#shared/auth/request-rate.ts';
import { asksForHistory, REPLAYS_PER_USER_PER_MINUTE, ReplayRate } from '#shared/stream/replay-rate.ts';

describe('ReplayRate', () => {
  it('counts only opens that ask for history, per user, and refills at the rate', () => {
    let now = 0;
    const replays = new ReplayRate(new RequestRate(() => now));
    expect(asksForHistory({})).toBe(false);
    for (const q of [
      { resend_all: true },
      { resend_mode: 'all' as const },
      { resend_mode: 'since' as const },
      { after_seq: 5 },
    ])
      expect(asksForHistory(q)).toBe(true);
    for (let i = 0; i < REPLAYS_PER_USER_PER_MINUTE; i++)
      expect(replays.take('u', { resend_all: true })).toBeUndefined();
    expect(replays.take('u', { resend_all: true })).toMatch(/^Too many replays.*retry in 2 s/);
    // A live open, and another user, are not held by it.
    expect(replays.take('u', {})).toBeUndefined();
    expect(replays.take('v', { after_seq: 0 })).toBeUndefined();
    now += 60_000 / REPLAYS_PER_USER_PER_MINUTE;
    expect(replays.take('u', { resend_all: true })).toBeUndefined();
    expect(replays.take('u', { resend_all: true })).toBeDefined();
  });
});
