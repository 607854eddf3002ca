import { poolWait } from '#shared/sandboxes/pool-operations.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(poolWait, { warmPool });
