import { randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import type { BillingExportSink } from '#shared/billing/export.ts';

/**
 * Local: export files under `dir` (DATA_DIR/billing-exports/), written to a temporary name and renamed,
 * so a reader never sees half a file and a re-run replaces the period's file whole.
 */
export function folderSink(dir: string): BillingExportSink {
  const root = resolve(dir);
  return {
    async put(key, body) {
      const path = resolve(root, key);
      // Keys are made from validated days; refuse anything that would leave the folder all the same.
      if (relative(root, path).startsWith('..') || path === root)
        throw new Error(`Export key outside the folder: ${key}`);
      await mkdir(dirname(path), { recursive: true });
      const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
      await writeFile(tmp, body, { mode: 0o600 });
      await rename(tmp, path);
      return path;
    },
  };
}
