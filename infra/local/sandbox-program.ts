import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The repository root (where `sandbox/main.ts` is). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ENTRY = 'sandbox/main.ts';

interface Manifest {
  /** The files the last build read (relative to the root) and the hash of their contents. */
  inputs: string[];
  inputsHash: string;
  /** The directory of that build's output, named by the hash of its contents. */
  dir: string;
}

/** SHA-256 over the files' names and contents; undefined when one is gone. */
function hashFiles(root: string, files: string[]): string | undefined {
  const hash = createHash('sha256');
  for (const file of [...files].sort()) {
    let content: Buffer;
    try {
      content = readFileSync(join(root, file));
    } catch {
      return undefined;
    }
    hash.update(file).update('\0').update(content).update('\0');
  }
  return hash.digest('hex');
}

/**
 * Builds the sandbox program (`sandbox/main.ts` and everything it imports) into one directory of
 * ES modules (`main.mjs` plus lazily loaded chunks) that runs on a bare Node, with no checkout and
 * no node_modules: what a contained sandbox mounts read-only. Cached under `buildDir` by the hash
 * of every input file the last build read, so it is rebuilt exactly when one of them changed (a new
 * import changes the importing file). Outputs live in directories named by their own hash and are
 * renamed into place whole, so concurrent builders (test workers) never see half a build and a
 * running sandbox's program is never rewritten under it.
 */
export async function buildSandboxProgram(buildDir = join(ROOT, '.build', 'sandbox'), root = ROOT): Promise<string> {
  const manifestFile = join(buildDir, 'manifest.json');
  try {
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest;
    const dir = join(buildDir, manifest.dir);
    if (existsSync(join(dir, 'main.mjs')) && hashFiles(root, manifest.inputs) === manifest.inputsHash) return dir;
  } catch {
    // No build yet, or an unreadable manifest: build.
  }
  const result = await build({
    entryPoints: { main: resolve(root, ENTRY) },
    absWorkingDir: root,
    bundle: true,
    // Chunks: the agent and its SDKs load after check-in, as `sandbox/main.ts` intends.
    splitting: true,
    outdir: join(buildDir, 'out'),
    outExtension: { '.js': '.mjs' },
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node.split('.')[0]}`,
    mainFields: ['module', 'main'],
    minify: true,
    // A CommonJS dependency may still call `require` (of `node:` built-ins): give it a real one.
    banner: {
      js: "import { createRequire as __acsCreateRequire } from 'node:module'; const require = __acsCreateRequire(import.meta.url);",
    },
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.includes(':'));
  const outHash = createHash('sha256');
  for (const file of result.outputFiles)
    outHash
      .update(relative(join(buildDir, 'out'), file.path))
      .update('\0')
      .update(file.contents);
  const name = outHash.digest('hex').slice(0, 16);
  const dir = join(buildDir, name);
  if (!existsSync(join(dir, 'main.mjs'))) {
    const staging = join(buildDir, `.staging-${process.pid}-${Date.now()}`);
    for (const file of result.outputFiles) {
      const target = join(staging, relative(join(buildDir, 'out'), file.path));
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, file.contents);
    }
    try {
      renameSync(staging, dir);
    } catch {
      // Another builder put the same output there first.
      rmSync(staging, { recursive: true, force: true });
    }
  }
  const manifest: Manifest = { inputs, inputsHash: hashFiles(root, inputs)!, dir: name };
  const tmpManifest = `${manifestFile}.${process.pid}`;
  writeFileSync(tmpManifest, JSON.stringify(manifest));
  renameSync(tmpManifest, manifestFile);
  prune(buildDir, name);
  return dir;
}

/** Removes earlier builds a day old (a server started before may still run one). */
function prune(buildDir: string, keep: string): void {
  const dayAgo = Date.now() - 24 * 3600_000;
  for (const entry of readdirSync(buildDir)) {
    if (entry === keep || !/^[0-9a-f]{16}$|^\.staging-/.test(entry)) continue;
    try {
      if (statSync(join(buildDir, entry)).mtimeMs < dayAgo)
        rmSync(join(buildDir, entry), { recursive: true, force: true });
    } catch {
      // Removed by another builder.
    }
  }
}
