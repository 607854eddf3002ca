import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface GitServer {
  /** `http://127.0.0.1:<port>`: use as the provider token's `host`. */
  url: string;
  root: string;
  /** Creates a bare repo `owner/name` with the given files on `main` (and extra branches). */
  createRepo(
    fullName: string,
    files: Record<string, string>,
    branches?: Record<string, Record<string, string>>,
  ): string;
  /** Every Authorization header the server saw. */
  authHeaders: string[];
  close(): Promise<void>;
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    stdio: 'pipe',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  });

/**
 * A real git smart-HTTP server on loopback (`git http-backend` as CGI) over bare repos on disk, which
 * answers 401 unless the request carries HTTP basic auth with `token`: clones prove the token was sent.
 */
export async function startGitServer(token: string, tokenUser = 'x-access-token'): Promise<GitServer> {
  const root = mkdtempSync(join(tmpdir(), 'acs-git-'));
  const expected = `Basic ${Buffer.from(`${tokenUser}:${token}`).toString('base64')}`;
  const authHeaders: string[] = [];
  const server: Server = createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    authHeaders.push(auth);
    if (auth !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
      return res.end('unauthorized');
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...process.env,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        CONTENT_LENGTH: req.headers['content-length'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        REMOTE_USER: tokenUser,
        HTTP_GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      },
    });
    req.pipe(cgi.stdin);
    let head: Buffer | null = Buffer.alloc(0);
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (head === null) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const i = line.indexOf(':');
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
      head = null;
    });
    cgi.on('close', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    root,
    authHeaders,
    createRepo(fullName, files, branches = {}) {
      const bare = join(root, `${fullName}.git`);
      mkdirSync(bare, { recursive: true });
      git(bare, 'init', '--bare', '-q', '-b', 'main');
      const work = mkdtempSync(join(tmpdir(), 'acs-gitwork-'));
      git(work, 'init', '-q', '-b', 'main');
      const commit = (set: Record<string, string>, message: string) => {
        for (const [path, content] of Object.entries(set)) {
          mkdirSync(join(work, path, '..'), { recursive: true });
          writeFileSync(join(work, path), content);
        }
        git(work, 'add', '-A');
        git(work, 'commit', '-q', '-m', message);
      };
      commit(files, 'initial');
      git(work, 'push', '-q', bare, 'main');
      for (const [branch, set] of Object.entries(branches)) {
        git(work, 'checkout', '-q', '-b', branch, 'main');
        commit(set, `on ${branch}`);
        git(work, 'push', '-q', bare, branch);
      }
      rmSync(work, { recursive: true, force: true });
      return bare;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        rmSync(root, { recursive: true, force: true });
      }),
  };
}
