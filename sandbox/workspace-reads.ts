/**
 * The program's side of workspace reads (the `workspace_read` command: shared/protocol.ts): list a
 * directory's files, read one file, a repository's git changes or one file's diff, and post the
 * answer to the bridge's reply route. The control plane sends a path already confined to the
 * workspace (relative, no `..`); here the files themselves are checked, since the agent made them:
 * nothing is read through a symlink that leads out of the workspace (the final component is never
 * followed; the directories on the way are resolved and must stay inside), the program's own state
 * (`.sandbox-state`) is never served, and every answer is bounded (sizes and counts of shared/protocol.ts).
 */
import { execFile } from 'node:child_process';
import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import {
  WORKSPACE_DIFF_MAX_BYTES,
  WORKSPACE_FILE_MAX_BYTES,
  WORKSPACE_LIST_MAX,
  WORKSPACE_LIST_PRUNED,
  WORKSPACE_REPLY_MAX_BYTES,
  workspaceReadOps,
  type WorkspaceReadPayload,
  type WorkspaceReplyBody,
} from '#shared/protocol.ts';

type Result = WorkspaceReplyBody['result'];
type Change = { status: 'ADDED' | 'DELETED' | 'UPDATED' | 'MOVED'; path: string };

const HIDDEN = '.sandbox-state';
/** Most directory entries one listing visits (a huge tree answers what it found, truncated). */
const LIST_VISIT_MAX = 100_000;
/** The bytes of paths a listing carries at most, so its reply stays under the bridge's limit. */
const LIST_BYTES_MAX = WORKSPACE_REPLY_MAX_BYTES - 16 * 1024;
const GIT_TIMEOUT_MS = 5_000;

const inside = (root: string, path: string) => path === root || path.startsWith(root + sep);
/** Inside the workspace and not in the program's state, where a path really is (links resolved). */
const servable = (root: string, real: string) => inside(root, real) && !inside(join(root, HIDDEN), real);

/** The payload as the program trusts it: a known op, a relative path without `..` or NUL, not under the state folder. */
export function parsePayload(payload: unknown): WorkspaceReadPayload | null {
  const p = payload as Partial<WorkspaceReadPayload> | null;
  if (!p || typeof p !== 'object') return null;
  if (typeof p.request_id !== 'string' || typeof p.conversation_id !== 'string') return null;
  if (!workspaceReadOps.includes(p.op as never) || typeof p.path !== 'string') return null;
  if (p.path.startsWith('/') || p.path.includes('\0') || p.path.split('/').includes('..')) return null;
  return p as WorkspaceReadPayload;
}

/** Answers one read of the workspace at `root`; never throws (a failure is `{error: 'failed'}`). */
export async function readWorkspace(root: string, op: WorkspaceReadPayload['op'], path: string): Promise<Result> {
  try {
    const rootReal = realpathSync(root);
    if (path === HIDDEN || path.startsWith(`${HIDDEN}/`)) return { error: 'not_found' };
    const target = join(rootReal, path);
    if (op === 'file') return readFile(rootReal, target, WORKSPACE_FILE_MAX_BYTES);
    if (op === 'list') return list(rootReal, target);
    if (op === 'git_changes') return await gitChanges(rootReal, target);
    return await gitDiff(rootReal, target);
  } catch (err) {
    return { error: 'failed', message: (err as Error).message.slice(0, 300) };
  }
}

/** Where an open descriptor really is (Linux), else the path resolved. */
function realOf(fd: number, path: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return realpathSync(path);
  }
}

/**
 * A file's bytes, opened without following a final symlink, then checked to be inside the
 * workspace where it really is (an agent swapping a directory for a link between the check and the
 * read gains nothing: the check is on the open descriptor).
 */
function openInside(rootReal: string, target: string): { fd: number } | { error: 'not_found' | 'not_a_file' } {
  let fd: number;
  try {
    fd = openSync(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return { error: 'not_found' };
  }
  if (!servable(rootReal, realOf(fd, target))) {
    closeSync(fd);
    return { error: 'not_found' };
  }
  return { fd };
}

function readBytes(rootReal: string, target: string, max: number): Buffer | Extract<Result, { error: string }> {
  const opened = openInside(rootReal, target);
  if ('error' in opened) return opened;
  try {
    const st = fstatSync(opened.fd);
    if (!st.isFile()) return { error: 'not_a_file' };
    if (st.size > max) return { error: 'too_large', size: st.size };
    const buf = Buffer.alloc(Math.min(st.size, max) + 1);
    let n = 0;
    while (n < buf.length) {
      const r = readSync(opened.fd, buf, n, buf.length - n, n);
      if (r <= 0) break;
      n += r;
    }
    // Grew while being read: refused as it is now.
    if (n > max) return { error: 'too_large', size: n };
    return buf.subarray(0, n);
  } finally {
    closeSync(opened.fd);
  }
}

function readFile(rootReal: string, target: string, max: number): Result {
  const bytes = readBytes(rootReal, target, max);
  return Buffer.isBuffer(bytes) ? { op: 'file', content_base64: bytes.toString('base64') } : bytes;
}

/** A directory inside the workspace (it may be reached through links that stay inside), or an error. */
function dirInside(rootReal: string, target: string): string | Extract<Result, { error: string }> {
  let real: string;
  try {
    real = realpathSync(target);
  } catch {
    return { error: 'not_found' };
  }
  if (!servable(rootReal, real)) return { error: 'not_found' };
  if (!statSync(real).isDirectory()) return { error: 'not_a_file' };
  return real;
}

/** The regular files under `target`, relative to it, in path order: links are neither followed nor listed. */
function list(rootReal: string, target: string): Result {
  const dir = dirInside(rootReal, target);
  if (typeof dir !== 'string') return dir;
  const files: string[] = [];
  let bytes = 0;
  let visited = 0;
  let truncated = false;
  const walk = (abs: string, rel: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (truncated) return;
      if (++visited > LIST_VISIT_MAX) {
        truncated = true;
        return;
      }
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!WORKSPACE_LIST_PRUNED.includes(e.name) && !(abs === rootReal && e.name === HIDDEN))
          walk(join(abs, e.name), path);
      } else if (e.isFile()) {
        bytes += Buffer.byteLength(path) + 4;
        if (files.length >= WORKSPACE_LIST_MAX || bytes > LIST_BYTES_MAX) {
          truncated = true;
          return;
        }
        files.push(path);
      }
    }
  };
  walk(dir, '');
  return { op: 'list', files, truncated };
}

/** git, with nothing of the repository's configuration that runs a program, and a minimal environment. */
function git(
  cwd: string,
  args: string[],
  rootReal: string,
  maxBuffer = 4 * 1024 * 1024,
): Promise<{ ok: boolean; out: Buffer }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      [
        '-c',
        'core.fsmonitor=false',
        '-c',
        'core.hooksPath=/dev/null',
        '-c',
        'diff.external=',
        // The agent's files may belong to another user id than this program's (a contained sandbox): reading is safe.
        '-c',
        'safe.directory=*',
        '--no-pager',
        ...args,
      ],
      {
        cwd,
        encoding: 'buffer',
        timeout: GIT_TIMEOUT_MS,
        maxBuffer,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? rootReal,
          GIT_TERMINAL_PROMPT: '0',
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_OPTIONAL_LOCKS: '0',
          // Never a repository above the workspace (locally the workspace sits inside the server's checkout).
          GIT_CEILING_DIRECTORIES: dirname(rootReal),
        },
      },
      (err, stdout) => resolve({ ok: !err, out: stdout as Buffer }),
    );
  });
}

/** Whether `dir` is the top of a git repository (not merely inside one). */
async function repoTop(dir: string, rootReal: string): Promise<boolean> {
  const top = await git(dir, ['rev-parse', '--show-toplevel'], rootReal);
  if (!top.ok) return false;
  try {
    return realpathSync(top.out.toString('utf8').trim()) === dir;
  } catch {
    return false;
  }
}

/** What changes are shown against, as the agent server does: the upstream, the remote's default branch, else HEAD. */
async function baseRef(repo: string, rootReal: string): Promise<string | null> {
  for (const ref of ['@{upstream}', 'origin/HEAD', 'HEAD']) {
    const r = await git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], rootReal);
    if (r.ok) return r.out.toString('utf8').trim();
  }
  return null;
}

async function changesIn(repo: string, rootReal: string): Promise<Change[]> {
  const out: Change[] = [];
  const ref = await baseRef(repo, rootReal);
  if (ref) {
    const diff = await git(repo, ['diff', '--no-ext-diff', '--no-textconv', '--name-status', '-z', ref], rootReal);
    const parts = diff.ok ? diff.out.toString('utf8').split('\0') : [];
    for (let i = 0; i + 1 < parts.length; ) {
      const status = parts[i]!;
      if (status.startsWith('R') || status.startsWith('C')) {
        // A rename is the old path deleted and the new one added (as the agent server reports it); a copy only the new.
        if (status.startsWith('R')) out.push({ status: 'DELETED', path: parts[i + 1]! });
        out.push({ status: 'ADDED', path: parts[i + 2]! });
        i += 3;
        continue;
      }
      const mapped = ({ M: 'UPDATED', A: 'ADDED', D: 'DELETED', U: 'UPDATED', T: 'UPDATED' } as const)[
        status[0] as 'M'
      ];
      if (mapped) out.push({ status: mapped, path: parts[i + 1]! });
      i += 2;
    }
  } else {
    // No commit yet: everything staged is new.
    const staged = await git(repo, ['ls-files', '-z'], rootReal);
    for (const p of staged.ok ? staged.out.toString('utf8').split('\0') : [])
      if (p) out.push({ status: 'ADDED', path: p });
  }
  const untracked = await git(repo, ['ls-files', '--others', '--exclude-standard', '-z'], rootReal);
  for (const p of untracked.ok ? untracked.out.toString('utf8').split('\0') : [])
    if (p) out.push({ status: 'ADDED', path: p });
  return out;
}

/**
 * The changes of the repository at `target` and of the repositories one level below it (a clone
 * under `/workspace/project/<repo>`), their paths relative to `target`; none where there is no repository.
 */
async function gitChanges(rootReal: string, target: string): Promise<Result> {
  const dir = dirInside(rootReal, target);
  if (typeof dir !== 'string') return dir;
  const changes: Change[] = [];
  const isRepo = await repoTop(dir, rootReal);
  const nested: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory() || e.name === HIDDEN || e.name === '.git') continue;
    try {
      statSync(join(dir, e.name, '.git'));
      nested.push(e.name);
    } catch {
      // not a repository
    }
  }
  if (isRepo)
    for (const c of await changesIn(dir, rootReal))
      if (!nested.some((n) => c.path === n || c.path.startsWith(`${n}/`))) changes.push(c);
  for (const name of nested.sort()) {
    const sub = join(dir, name);
    if (!(await repoTop(sub, rootReal))) continue;
    for (const c of await changesIn(sub, rootReal)) changes.push({ status: c.status, path: `${name}/${c.path}` });
  }
  changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  let bytes = 0;
  const kept: Change[] = [];
  for (const c of changes) {
    bytes += Buffer.byteLength(c.path) + 32;
    if (kept.length >= WORKSPACE_LIST_MAX || bytes > LIST_BYTES_MAX) break;
    kept.push(c);
  }
  return { op: 'git_changes', changes: kept };
}

const utf8 = (bytes: Buffer): string | null => {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
};

/**
 * One file's `original` (at the base ref of its closest repository inside the workspace) and
 * `modified` (the file now; empty when deleted); both null outside any repository, one null for bytes
 * that are not text.
 */
async function gitDiff(rootReal: string, target: string): Promise<Result> {
  const parent = dirInside(rootReal, dirname(target));
  if (typeof parent !== 'string') return parent;
  let repo: string | null = null;
  for (let d = parent; inside(rootReal, d); d = dirname(d)) {
    if (await repoTop(d, rootReal)) {
      repo = d;
      break;
    }
    if (d === rootReal) break;
  }
  if (!repo) return { op: 'git_diff', original: null, modified: null };
  const now = readBytes(rootReal, target, WORKSPACE_DIFF_MAX_BYTES);
  let modified: string | null;
  if (Buffer.isBuffer(now)) modified = utf8(now);
  else if (now.error === 'not_found') modified = '';
  else return now;
  let original = '';
  const ref = await baseRef(repo, rootReal);
  if (ref) {
    const rel = relative(repo, join(parent, basename(target)))
      .split(sep)
      .join('/');
    const shown = await git(repo, ['show', '--no-textconv', `${ref}:${rel}`], rootReal, WORKSPACE_DIFF_MAX_BYTES + 1);
    if (shown.ok) {
      if (shown.out.length > WORKSPACE_DIFF_MAX_BYTES) return { error: 'too_large', size: shown.out.length };
      original = utf8(shown.out) ?? '';
    }
  }
  return { op: 'git_diff', original, modified };
}

/** The reply to post: what does not fit the bridge's limit (text escaped into JSON grows) is answered as too large. */
export function replyBody(payload: WorkspaceReadPayload, result: Result): WorkspaceReplyBody {
  const body = { request_id: payload.request_id, conversation_id: payload.conversation_id, result };
  if (Buffer.byteLength(JSON.stringify(body)) <= WORKSPACE_REPLY_MAX_BYTES) return body;
  return { ...body, result: { error: 'too_large' } };
}
