import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ApiError } from '#shared/http/errors.ts';
import {
  WORKSPACE_FILE_MAX_BYTES,
  WORKSPACE_LIST_MAX,
  WORKSPACE_LIST_PRUNED,
  WORKSPACE_PATH_MAX_BYTES,
  type WorkspaceReadOp,
  type WorkspaceReply,
} from '#shared/protocol.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';

/**
 * A paused or stopped sandbox's workspace as a gzipped tar: on AWS its latest snapshot in S3 (the
 * task that wrote it is gone), locally `tar -cz` of its directory (so both read one format through
 * one reader). null when there is none yet.
 */
export interface WorkspaceArchives {
  open(rec: SandboxRecord): Promise<Readable | null>;
}

/** Most decompressed bytes one read goes through (a snapshot is the agent's work, so maybe a gzip bomb). */
export const ARCHIVE_MAX_BYTES = 1024 ** 3;
/** Most time one read spends (under the route's wait): then 504, as for a sandbox that does not answer. */
export const ARCHIVE_MAX_MS = 8_000;
/** Largest PAX or GNU long-name record read; a larger one ends the read as a bad archive. */
const META_MAX_BYTES = 64 * 1024;

/** `tar -cz` of a directory the server can see (the local runtime's workspace); symlinks are archived as links, never followed. */
export function directoryArchive(dir: string): Readable {
  const child = spawn('tar', ['-cz', '-C', dir, '.'], { stdio: ['ignore', 'pipe', 'ignore'] });
  // No tar, or it failed to start: the read sees a broken archive (nothing found), not a crash.
  child.on('error', (err) => child.stdout.destroy(err));
  return child.stdout;
}

/** An entry name as a workspace-relative path: `./src/a.ts` is `src/a.ts`; null for one that escapes or is absurd. */
function entryPath(name: string): string | null {
  const parts: string[] = [];
  for (const segment of name.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') return null;
    parts.push(segment);
  }
  const path = parts.join('/');
  return Buffer.byteLength(path) > WORKSPACE_PATH_MAX_BYTES ? null : path;
}

/** A header's octal (or GNU base-256) number. */
function tarNumber(field: Buffer): number {
  if (field[0]! & 0x80) {
    let n = 0;
    for (let i = 1; i < field.length; i++) n = n * 256 + field[i]!;
    return n;
  }
  const text = field.toString('latin1').replace(/\0.*$/s, '').trim();
  return text ? Number.parseInt(text, 8) : 0;
}

const cString = (field: Buffer) => {
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? field.length : end).toString('utf8');
};

interface Entry {
  path: string;
  type: 'file' | 'dir' | 'other';
  size: number;
}

/**
 * Reads `archive` (gzipped tar) once, entry by entry, holding at most one wanted file's bytes:
 * `list` collects the regular files under `path` (pruned directories skipped, at most
 * WORKSPACE_LIST_MAX, sorted), `file` stops at `path`. Symlinks and hard links are never followed
 * (a link is "not found"). Bounded in bytes and time (ARCHIVE_MAX_BYTES, ARCHIVE_MAX_MS).
 */
export async function readArchive(
  archive: Readable,
  op: WorkspaceReadOp,
  path: string,
  limits: { maxBytes?: number; maxMs?: number } = {},
): Promise<WorkspaceReply['result']> {
  const maxBytes = limits.maxBytes ?? ARCHIVE_MAX_BYTES;
  const deadline = Date.now() + (limits.maxMs ?? ARCHIVE_MAX_MS);
  const gunzip = createGunzip();
  archive.on('error', (err) => gunzip.destroy(err));
  archive.pipe(gunzip);
  const prefix = path ? `${path}/` : '';
  const files: string[] = [];
  let truncated = false;
  let sawDir = path === '';
  let pending: Buffer = Buffer.alloc(0);
  let seen = 0;
  // The entry being read: its header, how many data bytes are left, and what to do with them.
  let entry: Entry | null = null;
  let left = 0;
  let padding = 0;
  let keep: Buffer[] | null = null;
  let meta: { kind: 'pax' | 'longname'; chunks: Buffer[] } | null = null;
  let nextName: string | null = null;
  let zeroBlocks = 0;

  const finish = (): WorkspaceReply['result'] => {
    if (op === 'list') {
      if (!sawDir && !files.length) return { error: 'not_found' };
      files.sort();
      return { op: 'list', files, truncated };
    }
    return { error: 'not_found' };
  };

  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      seen += chunk.length;
      if (seen > maxBytes || Date.now() > deadline)
        throw new ApiError(504, {
          detail: "Reading the sandbox's saved workspace took too long: resume the sandbox to read it live",
        });
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      for (;;) {
        if (entry || meta) {
          // Data of the current entry (or of a metadata record), then its padding to 512.
          const take = Math.min(left, pending.length);
          if (take) {
            const data = pending.subarray(0, take);
            if (keep) keep.push(Buffer.from(data));
            if (meta) meta.chunks.push(Buffer.from(data));
            pending = pending.subarray(take);
            left -= take;
          }
          if (left > 0) break;
          if (pending.length < padding) break;
          pending = pending.subarray(padding);
          padding = 0;
          if (meta) {
            const text = Buffer.concat(meta.chunks).toString('utf8');
            if (meta.kind === 'longname') nextName = text.replace(/\0.*$/s, '');
            else {
              const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(text);
              if (m) nextName = m[1]!;
            }
            meta = null;
            continue;
          }
          if (keep) {
            const content = Buffer.concat(keep);
            return { op: 'file', content_base64: content.toString('base64') };
          }
          entry = null;
          continue;
        }
        if (pending.length < 512) break;
        const header = pending.subarray(0, 512);
        pending = pending.subarray(512);
        if (header.every((b) => b === 0)) {
          if (++zeroBlocks >= 2) return finish();
          continue;
        }
        zeroBlocks = 0;
        const size = tarNumber(header.subarray(124, 136));
        const type = String.fromCharCode(header[156]!);
        if (!Number.isSafeInteger(size) || size < 0) return finish();
        left = size;
        padding = (512 - (size % 512)) % 512;
        if (type === 'L' || type === 'x') {
          if (size > META_MAX_BYTES) return finish();
          meta = { kind: type === 'L' ? 'longname' : 'pax', chunks: [] };
          continue;
        }
        // POSIX ustar (`ustar\0`) splits long names into a prefix; GNU tar (`ustar `) uses those bytes otherwise.
        const ustarPrefix =
          header.subarray(257, 263).toString('latin1') === 'ustar\0' ? cString(header.subarray(345, 500)) : '';
        const rawName =
          nextName ??
          (ustarPrefix ? `${ustarPrefix}/${cString(header.subarray(0, 100))}` : cString(header.subarray(0, 100)));
        nextName = null;
        const name = entryPath(rawName);
        const kind: Entry['type'] =
          type === '0' || type === '\0' || type === '7' ? 'file' : type === '5' ? 'dir' : 'other';
        entry = { path: name ?? '', type: kind, size };
        keep = null;
        if (name === null) continue;
        if (op === 'file') {
          if (name === path) {
            if (kind === 'dir') return { error: 'not_a_file' };
            // A symlink or hard link is never followed: as if the file were not there.
            if (kind !== 'file') return { error: 'not_found' };
            if (size > WORKSPACE_FILE_MAX_BYTES) return { error: 'too_large', size };
            keep = [];
            if (size === 0) return { op: 'file', content_base64: '' };
          }
          continue;
        }
        // list
        if (name === path) {
          if (kind !== 'dir') return { error: kind === 'file' ? 'not_a_file' : 'not_found' };
          sawDir = true;
          continue;
        }
        if (!name.startsWith(prefix) || kind !== 'file') continue;
        const rel = name.slice(prefix.length);
        if (
          rel
            .split('/')
            .slice(0, -1)
            .some((d) => WORKSPACE_LIST_PRUNED.includes(d))
        )
          continue;
        if (files.length >= WORKSPACE_LIST_MAX) {
          truncated = true;
          return finish();
        }
        files.push(rel);
      }
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // A truncated or corrupt archive: what was read so far is all there is.
    return finish();
  } finally {
    // Whatever ended the read: no more of the snapshot's download, no tar left writing.
    archive.destroy();
    gunzip.destroy();
  }
  return finish();
}
