import { describe, expect, it } from 'vitest';
import { secondsLeftInWindow } from '#shared/auth/rate-limit.ts';

describe('secondsLeftInWindow (the Retry-After of a fixed-window refusal)', () => {
  const minute = Date.UTC(2026, 10, 27, 4, 40);
  it('is the whole window at its first instant, 1 in its last second, never 0', () => {
    expect(secondsLeftInWindow(60, minute)).toBe(60);
    expect(secondsLeftInWindow(60, minute + 30_500)).toBe(30);
    expect(secondsLeftInWindow(60, minute + 59_999)).toBe(1);
    expect(secondsLeftInWindow(60, minute + 60_000)).toBe(60);
  });
});
