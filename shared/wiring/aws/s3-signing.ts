import { s3SnapshotSigning } from '#shared/sandboxes/snapshots/snapshot-signing.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { bucketSnapshots } from '#shared/wiring/aws/s3.ts';

/** The S3 client with the presigners: only in the bundles of the bridge routes that sign snapshot uploads and downloads. */
export const signingWorkspaceSnapshots: Builder<'workspaceSnapshots'> = () => bucketSnapshots(s3SnapshotSigning);
