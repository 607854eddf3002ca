import { resolve } from 'node:path';
import * as z from 'zod';
import type { CommandPush } from '#shared/sandboxes/command-push.ts';
import type { Containment } from '#shared/sandboxes/runtime/containment.ts';
import type { SandboxConfig } from '#shared/sandboxes/config.ts';

/** The local stack's configuration, from the environment; checked once at start with the key named. */
export const localConfigSchema = z.object({
  PORT: z.coerce.number({ error: 'PORT must be a port number' }).int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('.data'),
  SANDBOX_SPECS_FILE: z.string().min(1).optional(),
  PLANS_FILE: z.string().min(1).optional(),
  PRICES_FILE: z.string().min(1).optional(),
  PLATFORM_LLMS_FILE: z.string().min(1).optional(),
  WARM_POOL_SIZE: z.coerce.number({ error: 'WARM_POOL_SIZE must be a whole number' }).int().min(0).max(50).optional(),
});

export type LocalConfig = {
  port: number;
  host: string;
  dataDir: string;
  memory: boolean;
  /** `--allow-uncontained`: without containment, start sandboxes for every user's key, not only the local user's. */
  allowUncontained?: boolean;
  /** Overrides the detected containment (tests of the uncontained mode). */
  containment?: Containment;
  /** Overrides of the sandbox settings (tests and benchmarks); the environment gives the rest. */
  sandboxes?: Partial<SandboxConfig>;
  /** The sandbox specs file (env SANDBOX_SPECS_FILE; default `config/sandbox-specs.json`). */
  specsFile?: string;
  /** The plans file (env PLANS_FILE; default `config/plans.json`), validated at start. */
  plansFile?: string;
  /** The prices file (env PRICES_FILE; default `config/prices.json`), validated at start. */
  pricesFile?: string;
  /** The platform models file (env PLATFORM_LLMS_FILE; default `config/platform-llms.json`), validated at start. */
  platformLlmsFile?: string;
  /** Replaces every spec's warm-pool size (env WARM_POOL_SIZE; 0 turns the pool off); the specs file's when unset. */
  warmPoolSize?: number;
  /** How often the local sweeper runs (default 30 s). */
  sweepIntervalMs?: number;
  /** How often the usage reconcile runs (default daily, as on AWS; the first run a day after start). */
  reconcileIntervalMs?: number;
  /**
   * Where queued commands are pushed, for programs started with a BRIDGE_SOCKET_URL (a spec's
   * initial_env). None by default: local programs long-poll. Tests plug in their emulation of API
   * Gateway's bridge socket (test/helpers/bridge-socket.ts).
   */
  commandPush?: CommandPush;
  /** How often the event stream pings each client; an unanswered ping closes it (default 30 s). */
  streamPingMs?: number;
  /**
   * false: no development OpenID provider even without OIDC_ISSUER (test stacks that do not sign in
   * skip loading it). `npm start` runs it (infra/local/dev-issuer.ts).
   */
  devIssuer?: boolean;
};

export function loadLocalConfig(env: NodeJS.ProcessEnv, argv: string[]): LocalConfig {
  const parsed = localConfigSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`Configuration error: ${issue.path.join('.')}: ${issue.message}`);
  }
  return {
    port: parsed.data.PORT,
    host: parsed.data.HOST,
    dataDir: resolve(parsed.data.DATA_DIR),
    memory: argv.includes('--memory'),
    ...(parsed.data.SANDBOX_SPECS_FILE ? { specsFile: resolve(parsed.data.SANDBOX_SPECS_FILE) } : {}),
    ...(parsed.data.PLANS_FILE ? { plansFile: resolve(parsed.data.PLANS_FILE) } : {}),
    ...(parsed.data.PRICES_FILE ? { pricesFile: resolve(parsed.data.PRICES_FILE) } : {}),
    ...(parsed.data.PLATFORM_LLMS_FILE ? { platformLlmsFile: resolve(parsed.data.PLATFORM_LLMS_FILE) } : {}),
    ...(parsed.data.WARM_POOL_SIZE !== undefined ? { warmPoolSize: parsed.data.WARM_POOL_SIZE } : {}),
    allowUncontained: argv.includes('--allow-uncontained'),
  };
}
