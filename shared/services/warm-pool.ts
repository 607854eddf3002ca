import { WarmPool, type WarmPoolDeps } from '#shared/sandboxes/pool.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/** The warm pool, over adapters built when first used: a spec without a pool never builds the pool's store. */
export const warmPool: ServiceFactory<WarmPool> = (c) =>
  new WarmPool(
    lazy<WarmPoolDeps>({
      store: () => c.adapters.poolStore,
      runtime: () => c.adapters.sandboxRuntime,
      specs: () => c.adapters.specs,
      config: () => c.adapters.sandboxConfig,
      refill: () => c.adapters.poolRefill,
      now: () => () => new Date(),
    }),
  );
