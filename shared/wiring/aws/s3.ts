import { S3Client } from '@aws-sdk/client-s3';
import {
  defaultSnapshotLimits,
  WorkspaceSnapshots,
  type SnapshotSigning,
} from '#shared/sandboxes/snapshots/workspace-snapshots.ts';
import { SNAPSHOT_STATE } from '#shared/sandboxes/snapshots/snapshot-model.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/** The workspace bucket's snapshots, signing with `signing` when given. */
export const bucketSnapshots = (signing?: SnapshotSigning) =>
  new WorkspaceSnapshots(
    new S3Client({}),
    requireEnv('WORKSPACE_BUCKET', 'the S3 bucket of workspace snapshots'),
    defaultSnapshotLimits,
    signing,
  );

/**
 * The S3 client without the presigners: what checks, lists and deletes a sandbox's snapshot objects
 * (the bridge's snapshot completion, sandbox deletion). The signing routes use `./s3-signing.ts`.
 */
export const workspaceSnapshots: Builder<'workspaceSnapshots'> = () => bucketSnapshots();

/** A paused sandbox's workspace for its reads: its current snapshot, read with GetObject only (`s3:workspaces:read`). */
export const workspaceArchives: Builder<'workspaceArchives'> = () => {
  const snapshots = bucketSnapshots();
  return {
    open: async (rec) => {
      const key = rec.runtimeState?.[SNAPSHOT_STATE];
      return key ? snapshots.read(rec.id, key) : null;
    },
  };
};
