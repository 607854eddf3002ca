import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { SnapshotSigning } from '#shared/sandboxes/snapshots/workspace-snapshots.ts';

/** The S3 presigners: imported only by the wiring of the bridge routes that sign snapshot uploads and downloads. */
export const s3SnapshotSigning: SnapshotSigning = { post: createPresignedPost, get: getSignedUrl };
