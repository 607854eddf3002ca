import { sandboxSnapshotsDeleteFunction } from '#shared/functions.ts';
import { removeSnapshots, type SnapshotRemovalRequest } from '#shared/sandboxes/snapshots/snapshot-removal.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { workspaceSnapshots } from '#shared/wiring/aws/s3.ts';

/** Invoked asynchronously once a deleted sandbox's last task stopped: removes its snapshot objects. */
export const handler = awsFunction(
  sandboxSnapshotsDeleteFunction,
  { workspaceSnapshots },
  {},
  (event: SnapshotRemovalRequest, _services, adapters) => removeSnapshots(event, adapters),
);
