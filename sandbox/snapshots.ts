/**
 * Workspace snapshots, from the sandbox's side (AWS: no shared file system; the task holds no AWS
 * credentials). A snapshot is `tar -cz` of the workspace into a temporary file outside it, uploaded
 * with the presigned POST the control plane issued for a new key of this sandbox, then reported
 * complete (the control plane checks the object exists before moving the sandbox's pointer).
 * Restore downloads the current snapshot with a presigned GET and unpacks it into the workspace.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdtempSync, openAsBlob, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { SnapshotUpload } from '#shared/protocol.ts';

/** The bridge calls snapshots need (sandbox/bridge-client.ts implements them). */
export interface SnapshotBridge {
  snapshotUpload(): Promise<SnapshotUpload>;
  snapshotComplete(key: string): Promise<void>;
  /** The current snapshot's presigned GET, or null when the sandbox has none yet. */
  snapshotDownload(): Promise<{ url: string } | null>;
}

function run(cmd: string, args: string[], input?: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}: ${stderr.trim()}`)),
    );
    if (input) {
      input.on('error', (err) => child.kill() && reject(err));
      input.pipe(child.stdin!);
    }
  });
}

/** Packs `dir` into a gzipped tar in a fresh temporary directory; the caller removes it. */
export async function packWorkspace(dir: string): Promise<{ file: string; bytes: number; cleanup: () => void }> {
  const tmp = mkdtempSync(join(tmpdir(), 'snapshot-'));
  const file = join(tmp, 'workspace.tar.gz');
  const cleanup = () => rmSync(tmp, { recursive: true, force: true });
  try {
    await run('tar', ['-czf', file, '-C', dir, '.']);
    return { file, bytes: statSync(file).size, cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

/** Uploads `file` with a presigned POST (the form's fields first, the file last, as S3 requires). */
export async function uploadSnapshot(grant: SnapshotUpload, file: string, bytes: number): Promise<void> {
  if (bytes > grant.max_bytes)
    throw new Error(`The workspace snapshot is ${bytes} bytes, more than the ${grant.max_bytes} allowed`);
  const form = new FormData();
  for (const [name, value] of Object.entries(grant.fields)) form.append(name, value);
  form.append('file', await openAsBlob(file), 'workspace.tar.gz');
  const res = await fetch(grant.url, { method: 'POST', body: form, signal: AbortSignal.timeout(110_000) });
  if (!res.ok) throw new Error(`The snapshot upload was refused (${res.status}): ${(await res.text()).slice(0, 300)}`);
}

/** Unpacks the snapshot at `url` into `dir` (ownership and modes of the sandbox's own user). */
export async function restoreWorkspace(url: string, dir: string): Promise<void> {
  const res = await fetch(url, { signal: AbortSignal.timeout(110_000) });
  if (!res.ok || !res.body) throw new Error(`The snapshot download failed (${res.status})`);
  await run(
    'tar',
    ['-xzf', '-', '-C', dir, '--no-same-owner', '--no-same-permissions'],
    Readable.fromWeb(res.body as WebReadableStream),
  );
}

/**
 * Takes snapshots, at most one in flight: a request while one runs marks the workspace dirty and
 * the next snapshot starts when the current one is done (later changes wait for it).
 */
export class Snapshotter {
  private running: Promise<void> | null = null;
  private dirty = false;
  /** The key of the last snapshot the control plane accepted. */
  lastKey: string | undefined;

  constructor(
    private readonly bridge: SnapshotBridge,
    private readonly workspaceDir: string,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void,
  ) {}

  private saved: string | undefined;

  /** Paths, sizes and modification times of the workspace: what "files changed" compares. */
  private fingerprint(): string {
    const hash = createHash('sha256');
    for (const name of (readdirSync(this.workspaceDir, { recursive: true }) as string[]).sort()) {
      try {
        const st = lstatSync(join(this.workspaceDir, name));
        hash.update(`${name}\0${st.size}\0${st.mtimeMs}\0${st.mode}\n`);
      } catch {
        // Removed while walking: the next fingerprint sees it.
      }
    }
    return hash.digest('hex');
  }

  /** A snapshot if the workspace changed since the last saved one (after agent steps, at stop). */
  requestIfChanged(): Promise<void> {
    if (!this.running && this.fingerprint() === this.saved) return Promise.resolve();
    return this.request();
  }

  /** Asks for a snapshot; resolves when the workspace as it is now is saved (or saving it failed, logged). */
  request(): Promise<void> {
    this.dirty = true;
    this.running ??= this.loop().finally(() => (this.running = null));
    return this.running;
  }

  private async loop(): Promise<void> {
    while (this.dirty) {
      this.dirty = false;
      try {
        await this.once();
      } catch (err) {
        this.log('warn', 'Workspace snapshot failed', { error: (err as Error).message });
        return;
      }
    }
  }

  private async once(): Promise<void> {
    const print = this.fingerprint();
    const packed = await packWorkspace(this.workspaceDir);
    try {
      const grant = await this.bridge.snapshotUpload();
      await uploadSnapshot(grant, packed.file, packed.bytes);
      await this.bridge.snapshotComplete(grant.key);
      this.lastKey = grant.key;
      this.saved = print;
      this.log('info', 'Workspace saved', { key: grant.key, bytes: packed.bytes });
    } finally {
      packed.cleanup();
    }
  }

  /** Restores the current snapshot, if the sandbox has one; returns whether it did. */
  async restore(): Promise<boolean> {
    const current = await this.bridge.snapshotDownload();
    if (!current) return false;
    await restoreWorkspace(current.url, this.workspaceDir);
    this.saved = this.fingerprint();
    this.log('info', 'Workspace restored');
    return true;
  }
}
