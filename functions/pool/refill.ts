import { poolRefillFunction } from '#shared/functions.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/** `{ specId }`: starts the spec's standbys up to its pool's size (after a claim; Lambda retries a failure). */
export const handler = awsFunction(poolRefillFunction, { warmPool }, (event: { specId?: string }, services) =>
  services.warmPool.refill(String(event.specId ?? '')),
);
