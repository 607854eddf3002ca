import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack?.stop());

const fullSettings = {
  language: 'en',
  agent: 'CodeActAgent',
  max_iterations: 42,
  security_analyzer: 'llm',
  confirmation_mode: true,
  llm_model: 'openai/gpt-4o',
  llm_api_key: 'sk-full-secret-1',
  llm_base_url: 'https://llm.example.test/v1',
  remote_runtime_resource_factor: 2,
  secrets_store: {
    provider_tokens: { github: { token: 'ghp_full_secret_2', host: 'github.com' } },
    custom_secrets: { DEPLOY_TOKEN: { secret: 'custom-full-secret-3', description: 'deploys' } },
  },
  enable_default_condenser: false,
  enable_sound_notifications: true,
  enable_proactive_conversation_starters: false,
  enable_solvability_analysis: false,
  user_consents_to_analytics: true,
  sandbox_base_container_image: 'node:22',
  sandbox_runtime_container_image: 'runtime:1',
  mcp_config: {
    sse_servers: [{ url: 'https://sse.example.test/mcp', api_key: 'sse-full-secret-4' }],
    stdio_servers: [
      { name: 'fetch', command: 'uvx', args: ['mcp-server-fetch'], env: { FETCH_TOKEN: 'env-full-secret-5' } },
    ],
    shttp_servers: [{ url: 'https://shttp.example.test/mcp' }],
  },
  search_api_key: 'tvly-full-secret-6',
  sandbox_api_key: 'sbx-full-secret-7',
  max_budget_per_task: 2.5,
  email: 'dev@example.test',
  email_verified: true,
  git_user_name: 'Dev Eloper',
  git_user_email: 'dev@example.test',
};
const secretValues = [
  'sk-full-secret-1',
  'ghp_full_secret_2',
  'custom-full-secret-3',
  'sse-full-secret-4',
  'env-full-secret-5',
  'tvly-full-secret-6',
  'sbx-full-secret-7',
];

describe('settings', () => {
  it('is 404 before anything was stored, and /users/me says settings null', async () => {
    const key = await stack.newUser('fresh');
    const res = await stack.call('GET', '/api/settings', { key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Settings not found' });
    expect((await stack.call('GET', '/api/v1/users/me', { key })).body).toMatchObject({ id: 'fresh', settings: null });
  });

  it('round-trips every field and type, with secrets masked and flags set', async () => {
    const key = await stack.newUser('roundtrip');
    const save = await stack.call('POST', '/api/settings', { key, body: fullSettings });
    expect(save.status).toBe(200);
    expect(save.body).toEqual({ message: 'Settings stored', ignored_fields: [] });
    const got = await stack.call('GET', '/api/settings', { key });
    expect(got.status).toBe(200);
    const { llm_api_key, search_api_key, sandbox_api_key, secrets_store, mcp_config, ...plain } = fullSettings;
    expect(got.body).toMatchObject(plain);
    expect(got.body.llm_api_key).toBeNull();
    expect(got.body.search_api_key).toBeNull();
    expect(got.body.sandbox_api_key).toBeNull();
    expect(got.body.llm_api_key_set).toBe(true);
    expect(got.body.search_api_key_set).toBe(true);
    expect(got.body.sandbox_api_key_set).toBe(true);
    expect(got.body.provider_tokens_set).toEqual({ github: 'github.com' });
    expect(got.body.secrets_store).toEqual({
      provider_tokens: { github: { token: null, host: 'github.com' } },
      custom_secrets: { DEPLOY_TOKEN: { secret: null, description: 'deploys' } },
    });
    expect(got.body.mcp_config).toEqual({
      sse_servers: [{ url: 'https://sse.example.test/mcp', api_key: null }],
      stdio_servers: [{ name: 'fetch', command: 'uvx', args: ['mcp-server-fetch'], env: { FETCH_TOKEN: null } }],
      shttp_servers: [{ url: 'https://shttp.example.test/mcp', api_key: null }],
    });
    for (const secret of secretValues) expect(got.text).not.toContain(secret);
    const me = await stack.call('GET', '/api/v1/users/me', { key });
    expect(me.body.settings).toEqual(got.body);
    // The agent gets the real values back.
    const resolved = await stack.services.settings.resolve('roundtrip');
    expect(resolved?.llm_api_key).toBe('sk-full-secret-1');
    expect(resolved?.secrets_store.provider_tokens.github?.token).toBe('ghp_full_secret_2');
    expect(resolved?.secrets_store.custom_secrets.DEPLOY_TOKEN?.secret).toBe('custom-full-secret-3');
    expect(resolved?.mcp_config.sse_servers[0]?.api_key).toBe('sse-full-secret-4');
    expect(resolved?.mcp_config.stdio_servers[0]?.env.FETCH_TOKEN).toBe('env-full-secret-5');
  });

  it('applies the defaults and shows every field (null when never set)', async () => {
    const key = await stack.newUser('defaults');
    await stack.call('POST', '/api/settings', { key, body: {} });
    const got = (await stack.call('GET', '/api/settings', { key })).body;
    expect(got.enable_default_condenser).toBe(true);
    expect(got.enable_sound_notifications).toBe(false);
    expect(got.enable_proactive_conversation_starters).toBe(true);
    expect(got.enable_solvability_analysis).toBe(true);
    for (const f of [
      'language',
      'agent',
      'max_iterations',
      'llm_model',
      'email',
      'git_user_name',
      'max_budget_per_task',
    ]) {
      expect(got).toHaveProperty(f, null);
    }
    expect(got.llm_api_key_set).toBe(false);
    expect(got.mcp_config).toEqual({ sse_servers: [], stdio_servers: [], shttp_servers: [] });
  });

  it('merges: absent keeps, null keeps the LLM key/model/base URL, search key and consent, null clears others, "" clears the LLM key', async () => {
    const key = await stack.newUser('merge');
    await stack.call('POST', '/api/settings', { key, body: fullSettings });
    await stack.call('POST', '/api/settings', {
      key,
      body: {
        llm_api_key: null,
        llm_model: null,
        llm_base_url: null,
        search_api_key: null,
        user_consents_to_analytics: null,
        language: null,
        max_iterations: 7,
      },
    });
    let got = (await stack.call('GET', '/api/settings', { key })).body;
    expect(got.llm_model).toBe('openai/gpt-4o');
    expect(got.llm_base_url).toBe('https://llm.example.test/v1');
    expect(got.user_consents_to_analytics).toBe(true);
    expect(got.llm_api_key_set).toBe(true);
    expect(got.search_api_key_set).toBe(true);
    expect(got.language).toBeNull();
    expect(got.max_iterations).toBe(7);
    expect(got.git_user_name).toBe('Dev Eloper');
    expect((await stack.services.settings.resolve('merge'))?.llm_api_key).toBe('sk-full-secret-1');

    await stack.call('POST', '/api/settings', { key, body: { llm_api_key: '' } });
    got = (await stack.call('GET', '/api/settings', { key })).body;
    expect(got.llm_api_key_set).toBe(false);
    expect(got.search_api_key_set).toBe(true);
    expect((await stack.services.settings.resolve('merge'))?.llm_api_key).toBeNull();

    await stack.call('POST', '/api/settings', { key, body: { llm_api_key: 'sk-new' } });
    expect((await stack.services.settings.resolve('merge'))?.llm_api_key).toBe('sk-new');
  });

  it('merges secrets_store and mcp_config without losing stored secrets on a GET-edit-POST round trip', async () => {
    const key = await stack.newUser('roundtrip2');
    await stack.call('POST', '/api/settings', { key, body: fullSettings });
    const masked = (await stack.call('GET', '/api/settings', { key })).body;
    masked.mcp_config.stdio_servers[0].args = ['--changed'];
    masked.secrets_store.custom_secrets.DEPLOY_TOKEN.description = 'renamed';
    masked.secrets_store.custom_secrets.OTHER = 'other-secret';
    const { llm_api_key_set, search_api_key_set, sandbox_api_key_set, provider_tokens_set, ...body } = masked;
    const save = await stack.call('POST', '/api/settings', { key, body });
    expect(save.status).toBe(200);
    const resolved = await stack.services.settings.resolve('roundtrip2');
    expect(resolved?.llm_api_key).toBe('sk-full-secret-1');
    expect(resolved?.sandbox_api_key).toBe('sbx-full-secret-7');
    expect(resolved?.secrets_store.provider_tokens.github?.token).toBe('ghp_full_secret_2');
    expect(resolved?.secrets_store.custom_secrets).toEqual({
      DEPLOY_TOKEN: { secret: 'custom-full-secret-3', description: 'renamed' },
      OTHER: { secret: 'other-secret', description: null },
    });
    expect(resolved?.mcp_config.sse_servers[0]?.api_key).toBe('sse-full-secret-4');
    expect(resolved?.mcp_config.stdio_servers[0]).toEqual({
      name: 'fetch',
      command: 'uvx',
      args: ['--changed'],
      env: { FETCH_TOKEN: 'env-full-secret-5' },
    });

    // Removing: a null entry removes a custom secret, "" removes a provider token.
    await stack.call('POST', '/api/settings', {
      key,
      body: { secrets_store: { custom_secrets: { OTHER: null }, provider_tokens: { github: { token: '' } } } },
    });
    const after = (await stack.call('GET', '/api/settings', { key })).body;
    expect(after.provider_tokens_set).toEqual({});
    expect(Object.keys(after.secrets_store.custom_secrets)).toEqual(['DEPLOY_TOKEN']);
  });

  it('names unknown fields in the response and does not store them', async () => {
    const key = await stack.newUser('typo');
    const res = await stack.call('POST', '/api/settings', {
      key,
      body: { llm_modle: 'x', language: 'de', __proto__x: 1 },
    });
    expect(res.status).toBe(200);
    expect(res.body.ignored_fields).toEqual(['llm_modle', '__proto__x']);
    const got = (await stack.call('GET', '/api/settings', { key })).body;
    expect(got).not.toHaveProperty('llm_modle');
    expect(got.language).toBe('de');
  });

  it('keeps both fields when two saves race', async () => {
    const key = await stack.newUser('race');
    await stack.call('POST', '/api/settings', { key, body: {} });
    const fields = [
      'language',
      'email',
      'git_user_name',
      'git_user_email',
      'sandbox_base_container_image',
      'sandbox_runtime_container_image',
    ];
    const results = await Promise.all(
      fields.map((f) => stack.call('POST', '/api/settings', { key, body: { [f]: `value-${f}` } })),
    );
    for (const r of results) expect([200, 409]).toContain(r.status);
    const got = (await stack.call('GET', '/api/settings', { key })).body;
    fields.forEach((f, i) => {
      if (results[i]!.status === 200) expect(got[f]).toBe(`value-${f}`);
    });
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
  });
});
