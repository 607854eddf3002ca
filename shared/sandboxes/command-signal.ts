/**
 * Wakes a command long-poll waiting in this process when a command for its sandbox is queued in
 * this process: the local server, where both run, delivers at once instead of at the next poll
 * interval. On Lambda the queueing and the polling function are different containers, so nothing
 * wakes and the poll reads the queue every interval, as before.
 */
const waiting = new Map<string, Set<() => void>>();

/** Resolves after `ms`, or as soon as a command for `sandboxId` is queued in this process. */
export function commandQueuedOrTimeout(sandboxId: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const set = waiting.get(sandboxId) ?? new Set();
    waiting.set(sandboxId, set);
    const done = () => {
      clearTimeout(timer);
      set.delete(done);
      if (!set.size && waiting.get(sandboxId) === set) waiting.delete(sandboxId);
      resolve();
    };
    const timer = setTimeout(done, ms);
    set.add(done);
  });
}

/** A command for `sandboxId` was queued: every poll of it waiting in this process reads the queue now. */
export function commandQueued(sandboxId: string): void {
  for (const wake of [...(waiting.get(sandboxId) ?? [])]) wake();
}
