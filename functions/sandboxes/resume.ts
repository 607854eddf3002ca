import { resumeSandbox } from '#shared/sandboxes/operations.ts';
import { sandboxes } from '#shared/services/sandboxes.ts';
import { poolClaims } from '#shared/services/pool-claims.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(resumeSandbox, { sandboxes, poolClaims });
