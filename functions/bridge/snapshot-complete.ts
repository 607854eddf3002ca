import { sandboxSnapshotComplete } from '#shared/sandboxes/snapshots/snapshot-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { workspaceSnapshots } from '#shared/wiring/aws/s3.ts';
import { sandboxConfig, sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { prices, usageStore } from '#shared/wiring/aws/usage.ts';

export const handler = awsRoute(
  sandboxSnapshotComplete,
  { sandboxStore, sandboxConfig, workspaceSnapshots, usageStore, prices },
  { sandboxBridge },
);
