import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/wiring/local.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { nodeBinary } from '#test/helpers/node-runtimes.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/** The sandbox image's Node (node:22-bookworm-slim): the program is tested on the version it ships on. */
const NODE_22 = nodeBinary(22);

let stack: TestStack;
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Where `tool` is on this machine's PATH. */
const which = (tool: string) => {
  const found = (process.env.PATH ?? '')
    .split(delimiter)
    .map((d) => join(d, tool))
    .find((p) => existsSync(p));
  if (!found) throw new Error(`${tool} is not installed here`);
  return found;
};

/** Runs sandbox/main.ts as the runtimes do, with only the given environment (async: the stack serves this process). */
function runProgram(env: Record<string, string>): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(NODE_22, ['--import', 'tsx', 'sandbox/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 30_000,
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stderr })));
}

describe('the sandbox program', () => {
  it("checks a user's image for bash and git (SANDBOX_IMAGE_CHECK=1), exiting with the code that names the one it lacks", async () => {
    const workspace = tempDir('acs-image-');
    const bin = tempDir('acs-bin-');
    // A PATH with node only: no bash, no git.
    symlinkSync(NODE_22, join(bin, 'node'));
    const bare = await runProgram({
      SANDBOX_ID: 'image-test',
      WORKSPACE_DIR: workspace,
      SANDBOX_IMAGE_CHECK: '1',
      PATH: bin,
    });
    expect(bare.status).toBe(80);
    expect(bare.stderr).toContain('"tool":"bash"');
    symlinkSync(which('bash'), join(bin, 'bash'));
    const noGit = await runProgram({
      SANDBOX_ID: 'image-test',
      WORKSPACE_DIR: workspace,
      SANDBOX_IMAGE_CHECK: '1',
      PATH: bin,
    });
    expect(noGit.status).toBe(81);
    expect(noGit.stderr).toContain('"tool":"git"');
  });

  it('exits with code 3 when its enrollment token is refused, without retrying forever', async () => {
    const workspace = tempDir('acs-refused-');
    const out = await runProgram({
      SANDBOX_ID: 'no-such-sandbox',
      WORKSPACE_DIR: workspace,
      BRIDGE_URL: stack.url,
      ENROLLMENT_TOKEN: 'enr_forged',
    });
    expect(out.status).toBe(3);
    expect(out.stderr).toContain('Check-in failed');
    expect(out.stderr).not.toContain('enr_forged');
  });

  it('exits on its own when the process that started it dies (a crashed local server leaves no orphan)', async () => {
    const workspace = tempDir('acs-parent-');
    // A stand-in server: starts the program, reports its pid, then dies without stopping it.
    const launcher = [
      "const { spawn } = require('node:child_process');",
      "const child = spawn(process.execPath, ['--import', 'tsx', 'sandbox/main.ts'], { detached: true, stdio: 'ignore', env: { ...process.env, SANDBOX_PARENT_PID: String(process.pid) } });",
      'process.stdout.write(String(child.pid));',
      'setTimeout(() => process.exit(0), 300);',
    ].join('\n');
    const parent = spawn(NODE_22, ['-e', launcher], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        SANDBOX_ID: 'orphan-test',
        WORKSPACE_DIR: workspace,
        BRIDGE_URL: 'http://127.0.0.1:9',
        ENROLLMENT_TOKEN: 'enr_x',
      },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    parent.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    await new Promise((resolve) => parent.once('close', resolve));
    const pid = Number(out);
    expect(pid).toBeGreaterThan(0);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    await waitFor('the orphaned program to exit', () => (alive() ? undefined : true), { timeoutMs: 15_000 });
  });

  it('fails clearly when its environment is incomplete', async () => {
    const out = await runProgram({ SANDBOX_ID: 'x' });
    expect(out.status).toBe(1);
    expect(out.stderr).toContain('WORKSPACE_DIR is not set');
  });
});

describe('the detail of a dead sandbox process', () => {
  it('keeps warnings, errors and plain text from stderr, not routine log lines', async () => {
    const { lastProblems } = await import('#shared/sandboxes/runtime/process-sandbox-runtime.ts');
    const stderr = [
      '{"level":"info","message":"Checked in"}',
      '{"level":"warn","message":"Polling for commands failed","error":"fetch failed"}',
      'TypeError: boom',
      '    at main (sandbox/main.ts:1:1)',
    ].join('\n');
    expect(lastProblems(stderr)).toBe(
      'Polling for commands failed: fetch failed | TypeError: boom | at main (sandbox/main.ts:1:1)',
    );
    expect(lastProblems('{"level":"info","message":"Checked in"}\n')).toBe('');
  });
});
