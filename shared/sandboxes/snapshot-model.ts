import * as z from 'zod';

/** The bridge's workspace-snapshot messages (AWS only: locally a workspace is a directory that stays). */
export const snapshotUploadSchema = z.object({
  key: z.string().meta({ description: 'The new object key, under this sandbox\'s own prefix' }),
  url: z.string(),
  fields: z.record(z.string(), z.string()).meta({ description: 'Form fields to send before the file (a presigned POST)' }),
  max_bytes: z.number().int().meta({ description: 'The content-length-range the upload is signed with' }),
  expires_at: z.string(),
});

export const snapshotCompleteBodySchema = z.object({
  key: z.string().min(1).max(512).meta({ description: 'The key of the upload that completed' }),
});
export const snapshotCompleteResponseSchema = z.object({ key: z.string(), bytes: z.number().int() });

export const snapshotDownloadSchema = z.object({
  url: z.string().nullable().meta({ description: 'A presigned GET of the current snapshot; null when the sandbox has none yet' }),
  expires_at: z.string().nullable(),
});

export class SnapshotKeyError extends Error {
  override name = 'SnapshotKeyError';
}

const SNAPSHOT_KEY = /^sandboxes\/([A-Za-z0-9_-]{1,128})\/([0-9]{13}-[0-9a-f]{16})\.tar\.gz$/;

/** The prefix that holds every object of one sandbox (and the IAM grant's unit). */
export function snapshotPrefix(sandboxId: string): string {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(sandboxId)) throw new SnapshotKeyError(`Not a sandbox id: ${sandboxId}`);
  return `sandboxes/${sandboxId}/`;
}

/** Whether `key` is one of this sandbox's snapshot keys (and nothing else: no `..`, no other prefix). */
export function ownsSnapshot(sandboxId: string, key: string): boolean {
  const m = SNAPSHOT_KEY.exec(key);
  return Boolean(m && m[1] === sandboxId);
}
