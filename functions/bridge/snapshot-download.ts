import { sandboxSnapshotDownload } from '#shared/sandboxes/snapshots/snapshot-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { signingWorkspaceSnapshots } from '#shared/wiring/aws/s3-signing.ts';

export const handler = awsRoute(
  sandboxSnapshotDownload,
  { sandboxBridge },
  { replace: { workspaceSnapshots: signingWorkspaceSnapshots } },
);
