import type { WarmPoolDeps } from '#shared/sandboxes/pool-claim.ts';
import type { ServiceContext } from '#shared/services.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/**
 * The pool's adapters, built when first used: a spec without a pool never builds the pool's store.
 * `claims`: what claims a standby, whose claims wake it on its pool socket (so it takes the binding at
 * once, not at its next heartbeat): `'start'` for the functions that start sandboxes on a request,
 * whose claims also set off their binding deadline; `'retry'` for the sweeper's own (a retried start),
 * whose deadline is its next sweep.
 */
export const warmPoolAdapters = [
  'poolStore',
  'sandboxRuntime',
  'specs',
  'sandboxConfig',
  'poolRefill',
  'poolDeadline',
  'commandPush',
] as const;

export const warmPoolDeps = (
  c: ServiceContext<(typeof warmPoolAdapters)[number], never>,
  claims?: 'start' | 'retry',
): WarmPoolDeps =>
  lazy<WarmPoolDeps>({
    store: () => c.adapters.poolStore,
    runtime: () => c.adapters.sandboxRuntime,
    specs: () => c.adapters.specs,
    config: () => c.adapters.sandboxConfig,
    refill: () => c.adapters.poolRefill,
    deadline: () => (claims === 'start' ? c.adapters.poolDeadline : null),
    push: () => (claims ? c.adapters.commandPush : null),
    now: () => () => new Date(),
  });
