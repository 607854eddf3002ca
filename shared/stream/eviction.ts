/**
 * Closing a person's open event streams at once (suspension, removal from an organization): an open
 * stream is otherwise re-checked only at its next ping (locally) or never (on AWS, where the socket
 * outlives the authorizer's decision).
 */
export interface StreamEviction {
  evict(userId: string): Promise<void>;
}

/**
 * The local gateway's open sockets by user: each registers a closer when it opens and removes it
 * when it closes; the process-wide registry, since the local stack runs the route handlers in the
 * gateway's own process.
 */
const closers = new Map<string, Set<() => void>>();

export function registerLocalStream(userId: string, close: () => void): () => void {
  let set = closers.get(userId);
  if (!set) {
    set = new Set();
    closers.set(userId, set);
  }
  set.add(close);
  return () => {
    set.delete(close);
    if (!set.size && closers.get(userId) === set) closers.delete(userId);
  };
}

export const localStreamEviction: StreamEviction = {
  async evict(userId) {
    for (const close of [...(closers.get(userId) ?? [])]) close();
  },
};
