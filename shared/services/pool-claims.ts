import { PoolClaims } from '#shared/sandboxes/pool-claim.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { warmPoolDeps } from '#shared/services/warm-pool.ts';

/** The warm pool's claim, for the functions that start sandboxes (they carry no standby-side pool code). */
export const poolClaims: ServiceFactory<PoolClaims> = (c) => new PoolClaims(warmPoolDeps(c));
