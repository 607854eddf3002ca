import type { Duplex } from 'node:stream';

/**
 * How long an open refused over the request rate waits for its 429 (at most its Retry-After, which is at
 * least a second): a client reopening in a loop as soon as it is answered then opens once a second per
 * socket instead of as fast as the server can refuse, and the server's one thread stays with the other
 * tenants' requests.
 */
export const REFUSAL_HOLD_MS = 1000;
/** Refusals held at once per client address; past it one is answered at once (each held one is a socket and a timer). */
export const MAX_HELD_PER_ADDRESS = 1024;

/** Refusals answered after a hold, counted per client address; whatever is held when the server closes is dropped. */
export class RefusalHold {
  private readonly byAddress = new Map<string, number>();
  private readonly holding = new Set<{ timer: NodeJS.Timeout; socket: Duplex }>();

  constructor(
    private readonly ms = REFUSAL_HOLD_MS,
    private readonly perAddress = MAX_HELD_PER_ADDRESS,
  ) {}

  /**
   * Calls `answer` after the hold (at most `retryAfterSeconds`, rounded up to whole seconds as the header
   * says them), or at once when the address holds `perAddress` already; never when the client left first.
   */
  hold(address: string, socket: Duplex, retryAfterSeconds: number | undefined, answer: () => void): void {
    const ms = Math.min(this.ms, Math.max(1, Math.ceil(retryAfterSeconds ?? 0)) * 1000);
    const count = this.byAddress.get(address) ?? 0;
    if (count >= this.perAddress) {
      answer();
      return;
    }
    this.byAddress.set(address, count + 1);
    const release = () => {
      this.holding.delete(entry);
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.byAddress.set(address, left);
      else this.byAddress.delete(address);
    };
    const gone = () => {
      clearTimeout(entry.timer);
      release();
    };
    const entry = {
      socket,
      timer: setTimeout(() => {
        socket.off('close', gone);
        release();
        answer();
      }, ms),
    };
    socket.once('close', gone);
    this.holding.add(entry);
  }

  /** How many refusals an address has held now. */
  heldBy(address: string): number {
    return this.byAddress.get(address) ?? 0;
  }

  /** Drops every held refusal (their sockets destroyed unanswered). */
  close(): void {
    for (const { timer, socket } of this.holding) {
      clearTimeout(timer);
      socket.destroy();
    }
    this.holding.clear();
    this.byAddress.clear();
  }
}
