import { sandboxSnapshotComplete } from '#shared/sandboxes/snapshots/snapshot-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(sandboxSnapshotComplete, { sandboxBridge });
