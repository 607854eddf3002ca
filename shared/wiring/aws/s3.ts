import { S3Client } from '@aws-sdk/client-s3';
import { WorkspaceSnapshots } from '#shared/sandboxes/workspace-snapshots.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/wiring/lazy.ts';

/** The S3 client and presigners: only in the bundles of the bridge's snapshot routes and of sandbox deletion. */
export const workspaceSnapshots: Builder<'workspaceSnapshots'> = () =>
  new WorkspaceSnapshots(new S3Client({}), requireEnv('WORKSPACE_BUCKET', 'the S3 bucket of workspace snapshots'));
