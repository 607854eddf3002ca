import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess } from '#test/helpers/server-process.ts';

const root = new URL('../../', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'acs-keys-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const keys = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'infra/local/keys-cli.ts', ...args], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir },
    encoding: 'utf8',
    timeout: 30_000,
  });

describe('npm run keys', () => {
  it('creates (printing the key once), lists without hashes, and revokes, on the local database', () => {
    const created = keys('create', '--user', 'alice', '--name', 'laptop');
    expect(created.status).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^acs_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    const listed = keys('list', '--user', 'alice');
    expect(listed.status).toBe(0);
    const list = JSON.parse(listed.stdout) as { keyId: string; name: string; userId: string }[];
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ name: 'laptop', userId: 'alice' });
    expect(listed.stdout).not.toContain('hash');
    expect(listed.stdout).not.toContain(key.slice(22));
    expect(keys('revoke', list[0]!.keyId).status).toBe(0);
    expect(keys('revoke', list[0]!.keyId).status).toBe(1);
    expect(JSON.parse(keys('list', '--user', 'alice').stdout)[0].revokedAt).toMatch(/^\d{4}-/);
  }, 60_000);

  it('refuses bad arguments with a message and exit 2', () => {
    const noUser = keys('create');
    expect(noUser.status).toBe(2);
    expect(noUser.stderr).toContain('--user');
    const badUser = keys('create', '--user', '../etc');
    expect(badUser.status).toBe(2);
    expect(keys('bogus').status).toBe(2);
  }, 60_000);

  it('issues keys the running server accepts at once', async () => {
    const server = await startServerProcess(dataDir, []);
    try {
      const created = keys('create', '--user', 'carol');
      expect(created.status).toBe(0);
      const res = await fetch(`${server.url}/api/v1/users/me`, {
        headers: { 'x-session-api-key': created.stdout.trim() },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { id: string }).id).toBe('carol');
    } finally {
      await server.interrupt();
    }
  }, 90_000);
});
