import { PoolClaims } from '#shared/sandboxes/pool-claim.ts';
import { defineService } from '#shared/services.ts';
import { warmPoolDeps, warmPoolAdapters } from '#shared/services/warm-pool-deps.ts';

/** The warm pool's claim, for the functions that start sandboxes (they carry no standby-side pool code), with its binding deadline. */
export const poolClaims = defineService(
  { adapters: [...warmPoolAdapters] },
  (c) => new PoolClaims(warmPoolDeps(c, 'start')),
);

/** The sweeper's claims (a retried start): woken the same way, without a deadline of their own (the next sweep finds them). */
export const sweepPoolClaims = defineService(
  { adapters: [...warmPoolAdapters] },
  (c) => new PoolClaims(warmPoolDeps(c, 'retry')),
);
