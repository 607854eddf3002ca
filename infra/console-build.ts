import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { buildSync } from 'esbuild';
import { CONSOLE_FILES, type ConsoleManifest } from '#shared/http/console-assets.ts';

/** The repository root (where `console/` is). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Where `npm start` and synthesis put the built console; the AWS functions carry a copy (infra/bundle.ts). */
export const CONSOLE_BUILD_DIR = join(ROOT, '.build', 'console');

interface BuildManifest extends ConsoleManifest {
  /** The files the last build read (relative to the root) and the hash of their contents. */
  inputs: string[];
  inputsHash: string;
}

/** SHA-256 over the files' names and contents; undefined when one is gone. */
function hashFiles(root: string, files: string[]): string | undefined {
  const hash = createHash('sha256');
  for (const file of [...files].sort()) {
    try {
      hash
        .update(file)
        .update('\0')
        .update(readFileSync(join(root, file)))
        .update('\0');
    } catch {
      return undefined;
    }
  }
  return hash.digest('hex');
}

/** Writes through a temporary name, so a server reading the file never sees half of it. */
function writeWhole(file: string, contents: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, contents);
  renameSync(tmp, file);
}

/**
 * Builds the web console (`console/src/main.tsx` and its stylesheet) into `app.js` and `app.css`
 * with a manifest naming their version (a hash of both, the page's cache-buster). Synchronous, so
 * the CDK app (synthesis is synchronous) and `npm start` share it; rebuilt only when a file the last
 * build read changed. Returns the manifest.
 */
export function buildConsole(outDir = CONSOLE_BUILD_DIR, root = ROOT): ConsoleManifest {
  const manifestFile = join(outDir, CONSOLE_FILES.manifest);
  try {
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as BuildManifest;
    const present = [CONSOLE_FILES.script, CONSOLE_FILES.style].every((f) => {
      try {
        readFileSync(join(outDir, f));
        return true;
      } catch {
        return false;
      }
    });
    if (present && hashFiles(root, manifest.inputs) === manifest.inputsHash)
      return {
        version: manifest.version,
        scriptBytes: manifest.scriptBytes,
        scriptGzipBytes: manifest.scriptGzipBytes,
      };
  } catch {
    // No build yet, or an unreadable manifest: build.
  }
  const result = buildSync({
    entryPoints: { app: resolve(root, 'console/src/main.tsx'), 'app-style': resolve(root, 'console/src/styles.css') },
    absWorkingDir: root,
    bundle: true,
    outdir: outDir,
    write: false,
    metafile: true,
    platform: 'browser',
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const script = result.outputFiles.find((f) => f.path.endsWith('app.js'))!.contents;
  const style = result.outputFiles.find((f) => f.path.endsWith('.css'))!.contents;
  const version = createHash('sha256').update(script).update('\0').update(style).digest('hex').slice(0, 16);
  const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.includes(':'));
  const manifest: BuildManifest = {
    version,
    scriptBytes: script.length,
    scriptGzipBytes: gzipSync(script, { level: 9 }).length,
    inputs,
    inputsHash: hashFiles(root, inputs)!,
  };
  mkdirSync(outDir, { recursive: true });
  writeWhole(join(outDir, CONSOLE_FILES.script), script);
  writeWhole(join(outDir, CONSOLE_FILES.style), style);
  writeWhole(manifestFile, JSON.stringify(manifest));
  return { version, scriptBytes: manifest.scriptBytes, scriptGzipBytes: manifest.scriptGzipBytes };
}
