import type { WarmPoolDeps } from '#shared/sandboxes/pool-claim.ts';
import { WarmPool } from '#shared/sandboxes/pool.ts';
import type { ServiceContext, ServiceFactory } from '#shared/services.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/**
 * The pool's adapters, built when first used: a spec without a pool never builds the pool's store.
 * `starts`: the functions that start sandboxes on a request, whose claims set off their binding deadline
 * and wake the standby on its pool socket; the sweeper's own claims (a retried start) do neither, its
 * next sweep being their deadline and the standby's heartbeat their delivery.
 */
export const warmPoolDeps = (c: ServiceContext, starts = false): WarmPoolDeps =>
  lazy<WarmPoolDeps>({
    store: () => c.adapters.poolStore,
    runtime: () => c.adapters.sandboxRuntime,
    specs: () => c.adapters.specs,
    config: () => c.adapters.sandboxConfig,
    refill: () => c.adapters.poolRefill,
    deadline: () => (starts ? c.adapters.poolDeadline : null),
    push: () => (starts ? c.adapters.commandPush : null),
    now: () => () => new Date(),
  });

/** The warm pool: the standbys' own routes, the refill, the sweep (and the claim, as `poolClaims`). */
export const warmPool: ServiceFactory<WarmPool> = (c) => new WarmPool(warmPoolDeps(c));
