import { sandboxSnapshotsDeleteFunction } from '#shared/functions.ts';
import { removeSnapshots, type SnapshotRemovalRequest } from '#shared/sandboxes/snapshots/snapshot-removal.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/** Invoked asynchronously once a deleted sandbox's last task stopped: removes its snapshot objects. */
export const handler = awsFunction(
  sandboxSnapshotsDeleteFunction,
  {},
  (event: SnapshotRemovalRequest, _services, adapters) => removeSnapshots(event, adapters),
  { adapters: ['workspaceSnapshots'] },
);
