import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RefusalHold } from '#infra/local/refusal-hold.ts';

/** A socket as the hold uses it: 'close' when destroyed. */
const socket = () => {
  const s = new EventEmitter() as EventEmitter & { destroyed: boolean; destroy: () => void };
  s.destroyed = false;
  s.destroy = () => {
    s.destroyed = true;
    s.emit('close');
  };
  return s as unknown as Duplex & { destroyed: boolean };
};

describe('RefusalHold (the local stream answers an open over the request rate after a hold)', () => {
  afterEach(() => vi.useRealTimers());

  it('answers after the hold, at most the Retry-After in whole seconds', () => {
    vi.useFakeTimers();
    const hold = new RefusalHold(1000, 10);
    const answered: string[] = [];
    hold.hold('10.0.0.1', socket(), 0.1, () => answered.push('a'));
    vi.advanceTimersByTime(999);
    expect(answered).toEqual([]);
    expect(hold.heldBy('10.0.0.1')).toBe(1);
    vi.advanceTimersByTime(1);
    expect(answered).toEqual(['a']);
    expect(hold.heldBy('10.0.0.1')).toBe(0);
    // A shorter hold configured: the hold, not the Retry-After.
    const short = new RefusalHold(200, 10);
    short.hold('10.0.0.1', socket(), 30, () => answered.push('b'));
    vi.advanceTimersByTime(200);
    expect(answered).toEqual(['a', 'b']);
  });

  it('holds at most its number per address (one past it is answered at once), each address apart', () => {
    vi.useFakeTimers();
    const hold = new RefusalHold(1000, 2);
    const answered: string[] = [];
    hold.hold('10.0.0.1', socket(), 1, () => answered.push('1'));
    hold.hold('10.0.0.1', socket(), 1, () => answered.push('2'));
    hold.hold('10.0.0.1', socket(), 1, () => answered.push('3'));
    hold.hold('10.0.0.2', socket(), 1, () => answered.push('other'));
    expect(answered).toEqual(['3']);
    vi.advanceTimersByTime(1000);
    expect(answered).toEqual(['3', '1', '2', 'other']);
  });

  it('a client that leaves while held gives its place back and is never answered; closing drops every hold', () => {
    vi.useFakeTimers();
    const hold = new RefusalHold(1000, 1);
    const answered: string[] = [];
    const leaving = socket();
    hold.hold('10.0.0.1', leaving, 1, () => answered.push('left'));
    leaving.destroy();
    expect(hold.heldBy('10.0.0.1')).toBe(0);
    const kept = socket();
    hold.hold('10.0.0.1', kept, 1, () => answered.push('kept'));
    expect(hold.heldBy('10.0.0.1')).toBe(1);
    hold.close();
    expect(kept.destroyed).toBe(true);
    vi.advanceTimersByTime(5000);
    expect(answered).toEqual([]);
    expect(hold.heldBy('10.0.0.1')).toBe(0);
  });
});
