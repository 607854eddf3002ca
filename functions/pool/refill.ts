import { poolRefillFunction } from '#shared/functions.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { sandboxRuntime } from '#shared/wiring/aws/fargate.ts';
import { poolStore } from '#shared/wiring/aws/pool.ts';
import { sandboxConfig } from '#shared/wiring/aws/sandboxes.ts';
import { specs } from '#shared/wiring/aws/specs.ts';

/** `{ specId }`: starts the spec's standbys up to its pool's size (after a claim; Lambda retries a failure). */
export const handler = awsFunction(
  poolRefillFunction,
  { poolStore, sandboxRuntime, specs, sandboxConfig },
  { warmPool },
  (event: { specId?: string }, services) => services.warmPool.refill(String(event.specId ?? '')),
);
