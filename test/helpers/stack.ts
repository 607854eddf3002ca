import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalConfig } from '#infra/local/config.ts';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { LocalSealer } from '#shared/secrets/local-sealer.ts';
import { startLocalStack, type LocalStack } from '#infra/local/stack.ts';

export type ApiCall = (
  method: string,
  path: string,
  options?: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> },
) => Promise<{ status: number; body: any; headers: Headers; text: string }>;

/** Requests to an API at `baseUrl` with an `X-Session-API-Key` (`defaultKey` unless given; null for none), JSON in and out. */
export function apiCaller(baseUrl: string, defaultKey: string | null): ApiCall {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? defaultKey : options.key;
    if (key !== null) headers['x-session-api-key'] = key;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed, headers: res.headers, text };
  };
}

/** The plans every test stack and test server runs with unless it names its own. */
export const ROOMY_PLANS = join(import.meta.dirname, '..', 'fixtures', 'plans', 'roomy.json');

export interface TestStack extends LocalStack {
  dataDir: string;
  /** fetch against the stack with the given key (default: the dev key). */
  call: ApiCall;
  /** A fresh user with a key of their own. */
  newUser(userId: string): Promise<string>;
  /**
   * A sandbox's own session key, as only the program inside holds it (no response shows it): read
   * from its record and unsealed, so tests can act as the sandbox on its bridge routes.
   */
  sandboxKey(sandboxId: string): Promise<string | null>;
  /**
   * Puts the organization of `userId` (reached with `key`; default: the dev key) on `plan`, stored
   * directly as an operator's plan change leaves it, and drops the account from the authorizer's cache.
   */
  putOnPlan(userId: string, plan: string, key?: string): Promise<void>;
  /** The organization of the caller whose key this is (as `GET /api/v1/users/me` answers it). */
  orgOf(key?: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * The real local stack (dynalite in memory, the gateway on a free loopback port) in this test process.
 * Other users' sandboxes start even where containment is unavailable (the containment tests, which
 * fail there, are what says so).
 */
export async function startTestStack(
  options: Pick<
    LocalConfig,
    | 'sandboxes'
    | 'sweepIntervalMs'
    | 'specsFile'
    | 'plansFile'
    | 'platformLlmsFile'
    | 'containment'
    | 'allowUncontained'
    | 'streamPingMs'
    | 'commandPush'
    | 'devIssuer'
    | 'warmPoolSize'
  > & { memory?: boolean } = {},
): Promise<TestStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-test-'));
  const stack = await startLocalStack({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    memory: true,
    allowUncontained: true,
    // The development OpenID provider only where a test asks (test/integration/dev-signin.test.ts): `npm start` always runs it.
    devIssuer: false,
    // Plans roomy enough that a suite about something else never meets a plan's limit; the plan
    // suites (test/integration/plans.test.ts, usage.test.ts) pass their own.
    plansFile: ROOMY_PLANS,
    // No standbys unless a test asks (pool tests give a specs file with `warmPool` and a size).
    warmPoolSize: 0,
    ...options,
  });
  const call = apiCaller(stack.url, stack.devKey);
  const orgOf = async (key?: string) => (await call('GET', '/api/v1/users/me', { key })).body.org_id as string;
  return {
    ...stack,
    dataDir,
    call,
    newUser: async (userId) => (await stack.services.apiKeys.create(userId, 'test')).key,
    orgOf,
    putOnPlan: async (userId, plan, key) => {
      const orgId = await orgOf(key);
      const store = new DynamoAccountStore();
      const org = await store.getOrg(orgId);
      if (!org || !(await store.replaceOrg({ ...org, plan })))
        throw new Error(`Could not put ${orgId} on plan ${plan}`);
      stack.services.accounts.forget(userId);
    },
    sandboxKey: async (sandboxId) => {
      const rec = await new DynamoSandboxStore().get(sandboxId);
      return rec?.sessionKeySealed
        ? LocalSealer.fromKeyFile(join(dataDir, 'secret.key')).open(rec.sessionKeySealed, rec.userId)
        : null;
    },
    stop: async () => {
      await stack.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
