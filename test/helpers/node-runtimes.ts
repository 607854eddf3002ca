import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../../scripts/node-runtimes/node_modules');

/**
 * The Node binary of a version that ships: 24 runs the Lambda bundles (`nodejs24.x`), 22 the sandbox
 * image (`node:22-bookworm-slim`). From the npm registry's `node-linux-<arch>` packages, pinned in
 * scripts/node-runtimes/package.json and installed by `npm ci` (its postinstall), never fetched by a test.
 */
export function nodeBinary(major: 22 | 24): string {
  const path = join(ROOT, `node${major}-linux-${process.arch}`, 'bin', 'node');
  if (!existsSync(path)) {
    throw new Error(
      `No Node ${major} at ${path}: run npm ci (its postinstall installs scripts/node-runtimes; linux x64 and arm64 only)`,
    );
  }
  return path;
}
