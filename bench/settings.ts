import type { Context } from 'aws-lambda';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { loadHandlers } from '#infra/local/gateway.ts';
import { authorizeRequest } from '#shared/auth/authorizer.ts';
import { keyRecordCache } from '#shared/auth/key-cache.ts';
import type { ApiEvent } from '#shared/http/wrapper.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import { documentClient, tableName } from '#shared/store/dynamo.ts';
import type { LocalServices } from '#shared/wiring/local.ts';
import { startTestStack } from '#test/helpers/stack.ts';
import { keepAliveClient } from './http.ts';
import { interleaved, ms, percentile } from './stats.ts';

const RUNS = 500;

/** The bench's save: a model, a new LLM key, and an MCP server with a variable (both secrets sealed). */
const benchBody = {
  llm_model: 'openai/gpt-4o',
  llm_api_key: 'sk-bench',
  max_iterations: 50,
  mcp_config: { stdio_servers: [{ name: 'a', command: 'b', env: { K: 'v' } }] },
};
/** What the console posts when a user saves the whole form and changes no secret (console/src/views/settings.tsx `bodyOf`). */
const consoleBody = {
  llm_model: 'openai/gpt-4o',
  llm_base_url: null,
  max_budget_per_task: null,
  enable_default_condenser: true,
  condenser_max_size: null,
  agent: 'CodeActAgent',
  max_iterations: 50,
  language: 'en',
  confirmation_mode: false,
  security_analyzer: null,
  enable_sound_notifications: false,
  enable_proactive_conversation_starters: true,
  enable_solvability_analysis: true,
  user_consents_to_analytics: false,
  sandbox_base_container_image: null,
  sandbox_runtime_container_image: null,
  remote_runtime_resource_factor: null,
  git_user_name: 'Bench',
  git_user_email: 'bench@example.test',
  email: null,
  email_verified: false,
  mcp_config: {
    sse_servers: [],
    shttp_servers: [],
    stdio_servers: [{ name: 'a', command: 'b', args: [], env: { K: null } }],
  },
  secrets_store: { custom_secrets: {}, provider_tokens: {} },
};

/** The payload 2.0 event the gateway would hand the route, with the authorizer's answer in it. */
function settingsEvent(method: 'GET' | 'POST', body: string | undefined, userId: string, keyId: string): ApiEvent {
  return {
    version: '2.0',
    routeKey: `${method} /api/settings`,
    rawPath: '/api/settings',
    rawQueryString: '',
    headers: { host: '127.0.0.1', 'content-type': 'application/json', 'x-forwarded-proto': 'http' },
    body,
    isBase64Encoded: false,
    requestContext: {
      requestId: 'bench',
      http: { method, path: '/api/settings' },
      authorizer: { lambda: { userId, via: 'key', keyId } },
    },
  } as unknown as ApiEvent;
}

/**
 * Settings through the whole local path (HTTP, gateway, authorizer, wrapper, sealing) against a bare
 * GetItem, and one request broken down by stage: each stage is timed on its own, in this process,
 * by calling the code the gateway calls (the authorizer's decision, the route's handler with a
 * ready event, the service, the store), so the gateway's share is the whole less the rest.
 */
export async function benchSettings(): Promise<string> {
  const stack = await startTestStack();
  try {
    const headers = { 'x-session-api-key': stack.devKey, 'content-type': 'application/json' };
    const body = JSON.stringify(benchBody);
    const client = keepAliveClient(stack.url);
    const request =
      (method: 'GET' | 'POST', path = '/api/settings', payload = body) =>
      async () => {
        const status = await client.send(method, path, headers, method === 'POST' ? payload : undefined);
        if (status !== 200) throw new Error(`${method} ${path} ${status}`);
      };
    const db = documentClient();
    const table = tableName('settings');
    const services = stack.services as LocalServices;
    const keyId = stack.devKey.split('_')[1]!;
    const authDeps = {
      apiKeys: services.apiKeys,
      sessions: services.sessions,
      conversationKeys: services.conversationKeys,
      accounts: services.accounts,
      oidc: null,
      allowedOrigins: [],
    };
    const authorize = () => authorizeRequest('GET', headers, authDeps);
    const handlers = await loadHandlers(services);
    const context = {} as Context;
    const runHandler = (id: string, method: 'GET' | 'POST') => async () => {
      const res = await handlers.get(id)!(
        settingsEvent(method, method === 'POST' ? body : undefined, 'dev', keyId),
        context,
      );
      if (res.statusCode !== 200) throw new Error(`${id} handler ${res.statusCode}: ${res.body}`);
    };
    const store = new DynamoSettingsStore();
    // The reads need a record from the first round on (the order is shuffled, so a read may come before any save).
    await request('POST')();
    // Every measure once a round, round after round (see `interleaved`): the ratios are taken side by side.
    const m = await interleaved(RUNS, {
      post: request('POST'),
      postConsole: request('POST', '/api/settings', JSON.stringify(consoleBody)),
      get: request('GET'),
      health: request('GET', '/health'),
      raw: () => db.send(new GetCommand({ TableName: table, Key: { userId: 'dev' }, ConsistentRead: true })),
      authCached: authorize,
      authUncached: () => {
        keyRecordCache.forget(keyId);
        return authorize();
      },
      getHandler: runHandler('getSettings', 'GET'),
      postHandler: runHandler('saveSettings', 'POST'),
      getService: () => services.settings.get('dev'),
      getStore: () => store.get('dev'),
      // The one write of a save: an UpdateItem that sets what the body names, checked by its condition.
      updateStore: async () => {
        if (
          !(await store.update(
            'dev',
            { set: [{ path: ['values', 'max_iterations'], value: 50 }], remove: [], assume: [] },
            new Date().toISOString(),
          ))
        )
          throw new Error('update refused');
      },
    });
    const {
      post,
      postConsole,
      get,
      health,
      raw,
      authCached,
      authUncached,
      getHandler,
      postHandler,
      getService,
      getStore,
      updateStore,
    } = m;
    client.close();

    const p50 = (s: number[]) => percentile(s, 50);
    const base = p50(raw);
    const row = (name: string, s: number[]) =>
      `| ${name} | ${ms(p50(s))} | ${ms(percentile(s, 99))} | ${(p50(s) / base).toFixed(2)}× |`;
    const stage = (name: string, value: number, what: string) => `| ${name} | ${ms(value)} | ${what} |`;
    return [
      '## Settings through the local gateway',
      '',
      `${RUNS} rounds after ${Math.min(20, RUNS)} warm-up ones, each round every measure below once, in an order shuffled each round (so they share the machine's load alike), dynalite in memory, one client on loopback (node:http on a keep-alive connection, as the SDK reaches dynalite; \`fetch\` would add about 0.3 ms of its own). The ratio is p50 against a raw dynalite GetItem from the same process (the same \`ConsistentRead\` GetItem the settings store makes): what the gateway, the authorizer, the wrapper, validation and sealing add. The authorizer holds the key's record for \`KEY_CACHE_SECONDS\` (30 s), so a busy key costs no GetItem of its own. \`POST\` is one DynamoDB call (a second only after a save that drops MCP servers or variables, to remove their values): an UpdateItem that sets only the fields the body names, with each secret given sealed on its own and nothing opened, its condition checking what the save assumed (a null that keeps a stored MCP value or custom secret needs it stored); a first save, a record of the earlier format, or a null with nothing stored to keep reads and writes instead. Two bodies: the bench's (a model, a new LLM key, an MCP server with a variable: two secrets sealed) and the console's whole form with no secret changed (every field, the MCP server's variable null to keep it).`,
      '',
      '| operation | p50 | p99 | p50 / raw GetItem |',
      '|---|---|---|---|',
      row('GET /api/settings', get),
      row("POST /api/settings (the bench's body)", post),
      row("POST /api/settings (the console's whole form, no secret changed)", postConsole),
      row('GET /health (no authorizer, no database)', health),
      row('raw dynalite GetItem', raw),
      '',
      "One request by stage (p50 of each stage timed alone, in the same process; the gateway's share is the whole request less the authorizer and the handler, so it includes the client's and the server's HTTP on loopback):",
      '',
      '| stage of `GET /api/settings` | p50 | what it is |',
      '|---|---|---|',
      stage('store', p50(getStore), '`DynamoSettingsStore.get`: the GetItem through the document client'),
      stage('service', p50(getService) - p50(getStore), '`SettingsService.get` less the store: masking'),
      stage(
        'wrapper and validation',
        p50(getHandler) - p50(getService),
        'the route handler (middy, path/query validation, principal check, log line) less the service',
      ),
      stage(
        'authorizer',
        p50(authCached),
        `\`authorizeRequest\` with the key's record held (${ms(p50(authUncached))} when it must read it: what the cache saves)`,
      ),
      stage(
        'gateway',
        p50(get) - p50(getHandler) - p50(authCached),
        'HTTP on loopback both ways, routing, building the event',
      ),
      stage('whole request', p50(get), `over HTTP (${(p50(get) / base).toFixed(2)}× the raw GetItem)`),
      '',
      `\`POST /api/settings\` (the bench's body) by the same cut: handler ${ms(p50(postHandler))} (of it, the store's conditional UpdateItem ${ms(p50(updateStore))}, i.e. ${(p50(updateStore) / base).toFixed(2)}× the raw GetItem: the floor of a save), authorizer ${ms(p50(authCached))}, gateway ${ms(p50(post) - p50(postHandler) - p50(authCached))}.`,
      '',
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
