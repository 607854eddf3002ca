import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { processEnv, sandboxPids } from '#test/helpers/sandboxes.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startServerProcess, type ServerProcess } from '#test/helpers/server-process.ts';

/** Whether the spec's own program (not bubblewrap or setpriv) runs for a sandbox. */
const programRuns = (sandboxId: string) =>
  readdirSync('/proc').some((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return (
        readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node' && processEnv(Number(pid))?.SANDBOX_ID === sandboxId
      );
    } catch {
      return false;
    }
  });

const dataDir = mkdtempSync(join(tmpdir(), 'acs-restart-'));
const env = { SANDBOX_SPECS_FILE: join(PROJECT_ROOT, 'test/fixtures/sandboxes/specs.json') };
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

const api = async (server: ServerProcess, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'x-session-api-key': server.key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return (await res.json()) as any;
};

describe('npm start after a crash', () => {
  it('reconciles the sandboxes that died with it before it takes requests', async () => {
    const first = await startServerProcess(dataDir, [], env);
    servers.push(first);
    const running = (await api(first, 'POST', '/api/v1/sandboxes')).id as string;
    await waitFor('a RUNNING sandbox', async () =>
      (await api(first, 'GET', `/api/v1/sandboxes?id=${running}`))[0].status === 'RUNNING' ? true : undefined,
    );
    const starting = (await api(first, 'POST', '/api/v1/sandboxes?sandbox_spec_id=never-checks-in')).id as string;
    expect((await api(first, 'GET', `/api/v1/sandboxes?id=${starting}`))[0]).toMatchObject({
      sandbox_spec_id: 'never-checks-in',
      status: 'STARTING',
    });
    // Its program runs (bubblewrap has set up the sandbox): a crash in the very first milliseconds of a
    // start, before `setpriv` has armed its death signal, is a race this test does not look at.
    await waitFor('the never-checks-in program', () => (programRuns(starting) ? true : undefined), {
      timeoutMs: 10_000,
    });

    // kill -9: no shutdown pause. The sandboxes die with the server (bubblewrap's --die-with-parent).
    const exited = once(first.child, 'exit');
    first.child.kill('SIGKILL');
    await exited;
    await waitFor(
      'the sandbox processes to end',
      () => (sandboxPids(running).length + sandboxPids(starting).length === 0 ? true : undefined),
      { timeoutMs: 10_000 },
    );

    const second = await startServerProcess(dataDir, [], env);
    servers.push(second);
    // The first answer after "listening" is already reconciled: no sweep, no time-out waited for.
    const [a, b] = await api(second, 'GET', `/api/v1/sandboxes?id=${running}&id=${starting}`);
    expect([a.status, b.status]).toEqual(['MISSING', 'ERROR']);
    expect(a.detail).toContain('ended with the local server');
    expect(b.detail).toContain('ended with the local server');
    expect(second.output()).toContain('reconciled: 2 sandbox(es)');

    // A lost sandbox resumes as usual.
    expect(await api(second, 'POST', `/api/v1/sandboxes/${running}/resume`)).toEqual({ success: true });
    await waitFor('the resumed sandbox', async () =>
      (await api(second, 'GET', `/api/v1/sandboxes?id=${running}`))[0].status === 'RUNNING' ? true : undefined,
    );
    expect(await second.interrupt()).toBe(0);
  }, 90_000);
});
