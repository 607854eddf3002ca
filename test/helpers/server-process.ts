import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ServerProcess {
  url: string;
  key: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Ctrl-C, then wait for the exit; resolves to the exit code. */
  interrupt(): Promise<number | null>;
}

const ROOT = new URL('../../', import.meta.url).pathname;

/** `npm start` as a real child process (tsx infra/local/server.ts), on a free port. */
export async function startServerProcess(
  dataDir: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'infra/local/server.ts'), ...args], {
    cwd: ROOT,
    // Roomy plans unless the test names its own (PLANS_FILE): suites about other things never meet a plan's limit.
    env: {
      ...process.env,
      PORT: '0',
      DATA_DIR: dataDir,
      POWERTOOLS_LOG_LEVEL: 'INFO',
      PLANS_FILE: join(ROOT, 'test/fixtures/plans/roomy.json'),
      // No standbys unless the test asks (the pool tests pass WARM_POOL_SIZE).
      WARM_POOL_SIZE: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 30_000;
  let url: string | undefined;
  while (!url) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not start:\n${out}`);
    }
    url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (!url) await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    key: readFileSync(join(dataDir, 'dev-api-key'), 'utf8').trim(),
    child,
    output: () => out,
    interrupt: async () => {
      if (child.exitCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      return child.exitCode;
    },
  };
}
