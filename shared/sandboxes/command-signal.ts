/**
 * Wakes a command long-poll waiting in this process when a command for its sandbox is queued in
 * this process: the local server, where both run, delivers at once instead of at the next poll
 * interval. On Lambda the queueing and the polling function are different containers, so nothing
 * wakes and the poll reads the queue every interval, as before.
 */
const waiting = new Map<string, Set<() => void>>();

/** Resolves after `ms`, or as soon as a command for `sandboxId` is queued in this process. */
export async function commandQueuedOrTimeout(sandboxId: string, ms: number): Promise<void> {
  const signal = armSignal(sandboxId);
  try {
    await signal.wait(ms);
  } finally {
    signal.close();
  }
}

/** A wake-up for one key, listening from its creation until `close()`. */
export interface ArmedSignal {
  /**
   * Resolves after `ms` (false), or as soon as the key is signalled (true): at once if it was since the last
   * wait (or the arming).
   */
  wait(ms: number): Promise<boolean>;
  close(): void;
}

/**
 * Listens for `key` from now on. A poll arms it before it reads what it waits for, so a signal that
 * comes between that read and the wait is kept and ends the wait at once, not a poll interval later.
 */
export function armSignal(key: string): ArmedSignal {
  const set = waiting.get(key) ?? new Set();
  waiting.set(key, set);
  let fired = false;
  let wake: ((signalled: boolean) => void) | undefined;
  const listener = () => {
    fired = true;
    wake?.(true);
  };
  set.add(listener);
  return {
    wait: (ms) =>
      new Promise((resolve) => {
        if (fired) {
          fired = false;
          return resolve(true);
        }
        const done = (signalled: boolean) => {
          clearTimeout(timer);
          wake = undefined;
          fired = false;
          resolve(signalled);
        };
        const timer = setTimeout(() => done(false), ms);
        wake = done;
      }),
    close: () => {
      wake?.(false);
      set.delete(listener);
      if (!set.size && waiting.get(key) === set) waiting.delete(key);
    },
  };
}

/** A command for `sandboxId` was queued: every poll of it waiting in this process reads the queue now. */
export function commandQueued(sandboxId: string): void {
  for (const wake of [...(waiting.get(sandboxId) ?? [])]) wake();
}
