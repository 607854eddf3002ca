import { lambdaEvent } from '#shared/lambda-event.ts';
import type { SnapshotRemovalRequest } from '#shared/sandboxes/snapshots/snapshot-removal.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/** An asynchronous invoke of the snapshot-removal function: the Lambda client, not S3's, in the bundles that finish a sandbox's deletion. */
export const snapshotRemoval: Builder<'snapshotRemoval'> = () => {
  const send = lambdaEvent<SnapshotRemovalRequest>(
    requireEnv('SNAPSHOTS_DELETE_FUNCTION', 'the function that removes snapshots'),
    'the snapshot-removal function',
  );
  return { remove: (sandboxId) => send({ sandboxId }) };
};
