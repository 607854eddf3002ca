import { sandboxSnapshotUpload } from '#shared/sandboxes/snapshots/snapshot-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { workspaceSnapshots } from '#shared/wiring/aws/s3-signing.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(
  sandboxSnapshotUpload,
  { sandboxStore, sandboxConfig, workspaceSnapshots },
  { sandboxBridge },
);
