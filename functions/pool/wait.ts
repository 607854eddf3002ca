import { poolWait } from '#shared/sandboxes/pool-operations.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { poolStore } from '#shared/wiring/aws/pool.ts';
import { sandboxConfig } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(poolWait, { poolStore, sandboxConfig }, { warmPool });
