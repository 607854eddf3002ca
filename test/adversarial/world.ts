import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '#test/adversarial/client.ts';
import { startServerProcess, type ServerProcess } from '#test/helpers/server-process.ts';
import { waitFor } from '#test/helpers/wait.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * A sandbox program the suite plays itself: it only hands its enrollment token to the test (through
 * its own workspace) and stays alive, so the test holds the sandbox's real credentials and can misuse them.
 */
const SPY = [
  "require('fs').writeFileSync(process.env.WORKSPACE_DIR + '/.enrollment', process.env.ENROLLMENT_TOKEN);",
  'setInterval(() => {}, 60000);',
  'setTimeout(() => process.exit(0), 900000);',
].join('');

export interface World {
  server: ServerProcess;
  client: Client;
  dataDir: string;
  /** The real sandbox program's spec (the first of config/sandbox-specs.json). */
  agentSpecId: string;
  /** A user of the keys CLI with a key; `org` places a new user in that organization (`--org`, `--role`). */
  newUser(userId: string, org?: { orgId: string; role: string }): Promise<string>;
  /** Starts a sandbox with the spy program and checks in as it: the sandbox's id, enrollment token and session key. */
  spySandbox(userKey: string): Promise<SpySandbox>;
  stop(): Promise<void>;
}

export interface SpySandbox {
  id: string;
  enrollment: string;
  key: string;
}

/** A file the spy sandbox writes: read once it has content. */
const fileWritten = (path: string) =>
  waitFor(`${path} to be written`, () => (existsSync(path) ? readFileSync(path, 'utf8') || undefined : undefined), {
    timeoutMs: 20_000,
    intervalMs: 50,
  });

/** `npm start` as a child process, with the spy spec first (the default) and the real specs after it. */
export async function startWorld(env: Record<string, string> = {}): Promise<World> {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-adversarial-'));
  const real = JSON.parse(readFileSync(join(ROOT, 'config/sandbox-specs.json'), 'utf8')) as {
    id: string;
    working_dir: string;
  }[];
  const specsFile = join(dataDir, 'specs.json');
  const spy = {
    id: 'spy',
    command: ['node', '-e', SPY],
    created_at: '2025-01-01T00:00:00Z',
    initial_env: {},
    working_dir: real[0]!.working_dir,
  };
  writeFileSync(specsFile, JSON.stringify([spy, ...real]));
  Object.assign(process.env, { SANDBOX_SPECS_FILE: specsFile, ...env });
  // `env` also over the helper's own defaults (e.g. a PLANS_FILE of the suite's instead of the roomy one).
  const server = await startServerProcess(join(dataDir, 'data'), [], env);
  delete process.env.SANDBOX_SPECS_FILE;
  const client = new Client(server.url);
  return {
    server,
    client,
    dataDir: join(dataDir, 'data'),
    agentSpecId: real[0]!.id,
    newUser: async (userId, org) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [
          '--import',
          'tsx',
          join(ROOT, 'infra/local/keys-cli.ts'),
          'create',
          '--user',
          userId,
          '--name',
          'adversarial',
          ...(org ? ['--org', org.orgId, '--role', org.role] : []),
        ],
        {
          cwd: ROOT,
          env: { ...process.env, DATA_DIR: join(dataDir, 'data') },
        },
      );
      return stdout.trim().split('\n').at(-1)!.trim();
    },
    spySandbox: async (userKey) => {
      const started = await client.call('POST', '/api/v1/sandboxes?sandbox_spec_id=spy', { key: userKey });
      if (started.status !== 200) throw new Error(`spy sandbox: HTTP ${started.status} ${started.text}`);
      const id: string = started.body.id;
      const enrollment = (await fileWritten(join(dataDir, 'data', 'sandboxes', id, 'workspace', '.enrollment'))).trim();
      const checkIn = await client.call('POST', `/api/v1/sandboxes/${id}/bridge/check-in`, {
        key: enrollment,
        body: { version: 'spy' },
        holdsSecrets: true,
      });
      if (checkIn.status !== 200) throw new Error(`spy check-in: HTTP ${checkIn.status} ${checkIn.text}`);
      return { id, enrollment, key: checkIn.body.session_api_key };
    },
    stop: async () => {
      await server.interrupt();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
