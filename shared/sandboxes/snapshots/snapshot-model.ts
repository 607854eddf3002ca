/** Where a sandbox record keeps its current snapshot's key (`runtimeState`; survives pause and resume). */
export const SNAPSHOT_STATE = 'snapshotKey';

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
