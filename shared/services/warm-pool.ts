import { WarmPool } from '#shared/sandboxes/pool.ts';
import { defineService } from '#shared/services.ts';
import { warmPoolAdapters, warmPoolDeps } from '#shared/services/warm-pool-deps.ts';

/** The warm pool: the standbys' own routes, the refill, the sweep (and the claim, as `poolClaims`). */
export const warmPool = defineService({ adapters: [...warmPoolAdapters] }, (c) => new WarmPool(warmPoolDeps(c)));
