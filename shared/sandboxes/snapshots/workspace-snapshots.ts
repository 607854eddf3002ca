import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import type { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { SnapshotUpload } from '#shared/protocol.ts';
import { ownsSnapshot, SnapshotKeyError, snapshotPrefix } from '#shared/sandboxes/snapshots/snapshot-model.ts';

/**
 * Workspace snapshots in S3, from the control plane's side. The sandbox task holds no AWS
 * credentials: it asks over the bridge, and this signs requests for ITS OWN prefix only
 * (`sandboxes/<sandbox id>/`): one size-bounded POST per snapshot to a new key, a GET of the
 * current snapshot. The record's pointer moves only after `verify` saw the object (HeadObject), so
 * a task killed mid-upload never makes a partial snapshot current.
 */
export interface SnapshotLimits {
  /** Largest snapshot accepted (the POST policy's content-length-range). */
  maxBytes: number;
  /** How long a signed request stays valid. */
  expiresSeconds: number;
  /**
   * Objects a sandbox's prefix may hold before another upload is granted: the current snapshot, one
   * in flight (the program takes one at a time) and one a killed task left behind, plus one spare.
   */
  maxObjects: number;
}

export const defaultSnapshotLimits: SnapshotLimits = { maxBytes: 2 * 1024 ** 3, expiresSeconds: 300, maxObjects: 4 };

/**
 * The presigners (shared/sandboxes/snapshots/snapshot-signing.ts), given only to the functions that sign
 * uploads or downloads: a function that only checks or deletes objects carries neither.
 */
export interface SnapshotSigning {
  post: typeof createPresignedPost;
  get: typeof getSignedUrl;
}

export class WorkspaceSnapshots {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly limits: SnapshotLimits = defaultSnapshotLimits,
    private readonly signing?: SnapshotSigning,
  ) {}

  private signer(): SnapshotSigning {
    if (!this.signing)
      throw new Error(
        'This function signs no snapshot requests: its entry does not give the signing workspace snapshots builder',
      );
    return this.signing;
  }

  /** Whether the sandbox's prefix has room for another upload (a hostile program could otherwise ask for grants without end). */
  async hasRoom(sandboxId: string): Promise<boolean> {
    const page = await this.s3.send(
      new ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: snapshotPrefix(sandboxId),
        MaxKeys: this.limits.maxObjects,
      }),
    );
    return (page.KeyCount ?? page.Contents?.length ?? 0) < this.limits.maxObjects;
  }

  /** A presigned POST for a new key, bounded in size and time. */
  async upload(sandboxId: string): Promise<SnapshotUpload> {
    const now = Date.now();
    const key = `${snapshotPrefix(sandboxId)}${String(now).padStart(13, '0')}-${randomBytes(8).toString('hex')}.tar.gz`;
    const { url, fields } = await this.signer().post(this.s3, {
      Bucket: this.bucket,
      Key: key,
      Conditions: [['content-length-range', 1, this.limits.maxBytes], { bucket: this.bucket }, ['eq', '$key', key]],
      Expires: this.limits.expiresSeconds,
    });
    return {
      key,
      url,
      fields,
      max_bytes: this.limits.maxBytes,
      expires_at: new Date(now + this.limits.expiresSeconds * 1000).toISOString(),
    };
  }

  /** A presigned GET of one of the sandbox's own snapshots. */
  async download(sandboxId: string, key: string): Promise<{ url: string; expires_at: string }> {
    if (!ownsSnapshot(sandboxId, key)) throw new SnapshotKeyError('Not a snapshot of this sandbox');
    const url = await this.signer().get(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: this.limits.expiresSeconds,
    });
    return { url, expires_at: new Date(Date.now() + this.limits.expiresSeconds * 1000).toISOString() };
  }

  /** One of the sandbox's own snapshots as a stream (a paused sandbox's workspace reads: workspace-archive.ts). */
  async read(sandboxId: string, key: string): Promise<Readable> {
    if (!ownsSnapshot(sandboxId, key)) throw new SnapshotKeyError('Not a snapshot of this sandbox');
    const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    return out.Body as Readable;
  }

  /** The snapshot's size once its upload completed; null when there is no such object (yet). */
  async verify(sandboxId: string, key: string): Promise<number | null> {
    if (!ownsSnapshot(sandboxId, key)) throw new SnapshotKeyError('Not a snapshot of this sandbox');
    try {
      const out = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.ContentLength ?? 0;
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
      throw err;
    }
  }

  /** Deletes the sandbox's objects except `keep` (older snapshots), or all of them (the sandbox is deleted). */
  async prune(sandboxId: string, keep?: string): Promise<number> {
    const prefix = snapshotPrefix(sandboxId);
    let removed = 0;
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      const keys = (page.Contents ?? []).map((o) => o.Key!).filter((k) => k && k !== keep);
      if (keys.length) {
        await this.s3.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
          }),
        );
        removed += keys.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return removed;
  }
}
