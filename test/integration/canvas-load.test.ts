import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { fillPath } from '#shared/protocol.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { llmModels } from '#shared/options/model.ts';
import { conversation, startConversation } from '#test/helpers/conversations.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

// What Agent Canvas's cloud mode reads on load (its built code in @openhands/agent-canvas 1.20.0:
// api/cloud/*.js, api/config-service, api/event-service), over HTTP against the local stack, with a
// scripted LLM: the shapes it reads, and what a hostile user, a conversation key and a foreign id get.
const LLM_KEY = 'sk-planted-canvas-llm-key-7f3a';
const SEARCH_KEY = 'tvly-planted-canvas-search-key-91c2';
const CUSTOM = 'planted-canvas-custom-secret-55e1';
const SECRET_VALUE = 'planted-ui-secret-value-3d9b';
const GIT_TOKEN = 'ghp_planted-git-token-8e21';
const planted = [LLM_KEY, SEARCH_KEY, CUSTOM, SECRET_VALUE, GIT_TOKEN];

let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
let a: string; // the dev user's two conversations
let b: string;
let sandboxA: string; // their sandboxes
let sandboxB: string;
let keyA: string; // conversation A's own key
let mallory: string; // another user's key
const answers: string[] = []; // every answer text, swept for planted secrets at the end

const call = async (...args: Parameters<TestStack['call']>) => {
  const res = await stack.call(...args);
  answers.push(res.text);
  return res;
};

beforeAll(async () => {
  // Settings saved below through `call`, so their answer is swept for the planted secrets too.
  agent = await startAgentStack({ script: [reply.finish('answer one'), reply.finish('answer two')], settings: null });
  ({ stack, llm } = agent);
  mallory = await stack.newUser('mallory-canvas');
  await call('POST', '/api/settings', {
    body: {
      llm_model: 'm',
      llm_api_key: LLM_KEY,
      llm_base_url: llm.baseUrl,
      search_api_key: SEARCH_KEY,
      secrets_store: { custom_secrets: { PLANTED: { secret: CUSTOM, description: 'a planted one' } } },
    },
  });
  const started = await Promise.all([
    startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } }),
    startConversation(stack, { initial_message: { content: [{ type: 'text', text: 'hi' }] } }),
  ]);
  [a, b] = started.map((t) => t.app_conversation_id) as [string, string];
  [sandboxA, sandboxB] = started.map((t) => t.sandbox_id) as [string, string];
  for (const id of [a, b])
    await waitFor('condition', () => conversation(stack, id), {
      until: (c) => c?.execution_status === 'finished',
      timeoutMs: 30_000,
    });
  keyA = (await call('GET', `/api/conversations/${a}`)).body.session_api_key;
  expect(keyA).toBeTruthy();
}, 60_000);

afterAll(() => agent?.stop());

describe('settings as Agent Canvas reads and writes them (/api/v1/settings)', () => {
  it('GET answers 404 before any settings (Canvas then shows its defaults), the grouped view after', async () => {
    expect((await call('GET', '/api/v1/settings', { key: mallory })).status).toBe(404);
    const got = await call('GET', '/api/v1/settings');
    expect(got.status).toBe(200);
    expect(got.body.agent_settings.llm).toEqual({ model: 'm', base_url: llm.baseUrl, api_key: null });
    expect(got.body.agent_settings.agent).toBe('CodeActAgent');
    expect(got.body.conversation_settings.confirmation_mode).toBe(false);
    // What decides whether Canvas's composer may send.
    expect(got.body.llm_api_key_set).toBe(true);
    expect(got.body.llm_api_key).toBeNull();
    expect(got.body.search_api_key).toBeNull();
  });

  it("POST stores Canvas's diffs (the key too), reports what it ignores, and refuses bad values naming the field", async () => {
    const user = await stack.newUser('canvas-writer');
    const saved = await call('POST', '/api/v1/settings', {
      key: user,
      body: {
        agent_settings_diff: {
          llm: { model: 'openai/gpt-4o', api_key: 'sk-writer-key' },
          condenser: { max_size: 60 },
          acp_model: 'x',
        },
        conversation_settings_diff: { confirmation_mode: true, max_iterations: 7 },
        git_user_name: 'Writer',
        theme: 'dark',
      },
    });
    expect(saved.status).toBe(200);
    expect(saved.body.ignored_fields.sort()).toEqual(['agent_settings_diff.acp_model', 'theme']);
    const legacy = (await call('GET', '/api/settings', { key: user })).body;
    expect(legacy).toMatchObject({
      llm_model: 'openai/gpt-4o',
      llm_api_key_set: true,
      confirmation_mode: true,
      max_iterations: 7,
      condenser_max_size: 60,
      git_user_name: 'Writer',
    });
    expect(JSON.stringify(legacy)).not.toContain('sk-writer-key');
    // Audited as /api/settings is: field names, the secret by name, never its value.
    const log = await call('GET', '/api/v1/audit-log?limit=100', { key: user });
    expect(log.status).toBe(200);
    expect(log.body.items).toContainEqual(expect.objectContaining({ action: 'secret_set', fields: ['llm_api_key'] }));
    expect(log.text).not.toContain('sk-writer-key');
    const canvas = (await call('GET', '/api/v1/settings', { key: user })).body;
    expect(canvas.conversation_settings).toMatchObject({ confirmation_mode: true, max_iterations: 7 });
    expect(canvas.agent_settings.condenser.max_size).toBe(60);

    const bad = await call('POST', '/api/v1/settings', {
      key: user,
      body: { conversation_settings_diff: { max_iterations: 0 } },
    });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body.detail)).toContain('max_iterations');
    const badAgent = await call('POST', '/api/v1/settings', {
      key: user,
      body: { agent_settings_diff: { agent: 'EvilAgent' } },
    });
    expect(badAgent.status).toBe(422);
    // Nothing of the refused saves was stored.
    expect((await call('GET', '/api/settings', { key: user })).body.max_iterations).toBe(7);
  });

  it('the schemas describe exactly the fields stored here; the model choices are /api/options/models', async () => {
    const agent = await call('GET', '/api/v1/settings/agent-schema');
    expect(agent.status).toBe(200);
    const keys = agent.body.sections.flatMap((s: any) => s.fields.map((f: any) => f.key));
    expect(keys).toEqual([
      'llm.model',
      'llm.base_url',
      'llm.api_key',
      'agent',
      'condenser.enabled',
      'condenser.max_size',
    ]);
    const model = agent.body.sections[0].fields[0];
    expect(model.choices.map((c: any) => c.value)).toEqual((await call('GET', '/api/options/models')).body as string[]);
    expect(agent.body.sections[0].fields.find((f: any) => f.key === 'llm.api_key').secret).toBe(true);
    const conv = await call('GET', '/api/v1/settings/conversation-schema');
    // Sectioned as the SDK's ConversationSettings: Canvas's Verification page shows the `verification` section.
    expect(conv.body.sections.map((s: any) => [s.key, s.fields.map((f: any) => f.key)])).toEqual([
      ['verification', ['confirmation_mode', 'security_analyzer']],
      ['general', ['max_iterations']],
    ]);
  });
});

describe('models, profiles and skills: served, empty where we have none (never a 404)', () => {
  it('models search: the options list split into provider and name, filtered and paged', async () => {
    const all = await call('GET', '/api/v1/config/models/search');
    expect(all.status).toBe(200);
    // The platform models of config/platform-llms.json first (docs/platform-llms.md), then the user-key ones.
    expect(all.body.items.length).toBe(llmModels().length + 2);
    expect(all.body.items[0]).toEqual(expect.objectContaining({ provider: 'platform', platform: true }));
    expect(all.body.items).toContainEqual({
      platform: false,
      provider: 'openai',
      name: 'gpt-4o',
      verified: true,
      free: false,
      default: false,
    });
    expect(all.body.next_page_id).toBeNull();
    const anthropic = await call('GET', '/api/v1/config/models/search?provider__eq=anthropic');
    expect(anthropic.body.items.every((m: any) => m.provider === 'anthropic')).toBe(true);
    expect(anthropic.body.items.length).toBeGreaterThan(0);
    const mini = await call('GET', '/api/v1/config/models/search?query=MINI');
    expect(mini.body.items.map((m: any) => m.name)).toEqual(['gpt-4.1-mini', 'gpt-4o-mini', 'gpt-4.1-mini', 'o4-mini']);
    const first = await call('GET', '/api/v1/config/models/search?limit=3');
    expect(first.body.items).toHaveLength(3);
    const rest = await call('GET', `/api/v1/config/models/search?limit=100&page_id=${first.body.next_page_id}`);
    expect([...first.body.items, ...rest.body.items]).toEqual(all.body.items);
    expect((await call('GET', '/api/v1/config/models/search?page_id=abc')).status).toBe(422);
    expect((await call('GET', '/api/v1/config/models/search?limit=1000')).status).toBe(422);
    const providers = await call('GET', '/api/v1/config/providers/search');
    expect(providers.body.items.map((p: any) => p.name)).toEqual(['openai', 'anthropic']);
  });

  it('LLM profiles, agent profiles and skills answer the empty shapes Canvas reads', async () => {
    expect((await call('GET', '/api/v1/settings/profiles')).body).toEqual({ profiles: [], active_profile: null });
    expect((await call('GET', '/api/agent-profiles')).body).toEqual({ profiles: [], active_agent_profile_id: null });
    expect((await call('GET', '/api/v1/skills/search?limit=100')).body).toEqual({ items: [], next_page_id: null });
    expect((await call('GET', `/api/v1/app-conversations/${a}/skills`)).body).toEqual({ skills: [] });
  });

  it('organization profiles and the caller in it: their own organization only', async () => {
    const mine = (await call('GET', '/api/organizations')).body.current_org_id as string;
    expect(mine).toBeTruthy();
    const own = await call('GET', `/api/organizations/${mine}/profiles`);
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ profiles: [], active_profile: null });
    const malloryOrg = (await call('GET', '/api/organizations', { key: mallory })).body.current_org_id as string;
    expect(malloryOrg).not.toBe(mine);
    expect((await call('GET', `/api/organizations/${malloryOrg}/profiles`)).status).toBe(404);
    expect((await call('GET', `/api/organizations/${mine}/profiles`, { key: mallory })).status).toBe(404);
    const me = await call('GET', `/api/organizations/${mine}/me`);
    expect(me.body).toMatchObject({ org_id: mine, user_id: 'dev', permissions: [] });
    expect((await call('GET', `/api/organizations/${malloryOrg}/me`)).status).toBe(404);
    expect((await call('GET', '/api/organizations/not-an-org/profiles')).status).toBe(404);
    // Its LLM settings page reads the organization's provider connections: none here, never a 404 for its own.
    expect((await call('GET', `/api/organizations/${mine}/provider-connections`)).body).toEqual({ connections: [] });
    expect((await call('GET', `/api/organizations/${malloryOrg}/provider-connections`)).status).toBe(404);
    expect((await call('GET', `/api/organizations/${mine}/provider-connections`, { key: mallory })).status).toBe(404);
  });
});

describe("a new conversation from Canvas's home composer: POST /api/v1/app-conversations as it sends it", () => {
  it('accepts its null plugins and agent profile, and refuses a value for either naming the field', async () => {
    const body = (extra: Record<string, unknown>) => ({
      initial_message: { role: 'user', content: [{ type: 'text', text: 'from the home composer' }] },
      title: null,
      selected_repository: null,
      selected_branch: null,
      git_provider: null,
      plugins: null,
      parent_conversation_id: null,
      sandbox_id: null,
      agent_profile_id: null,
      trigger: 'gui',
      ...extra,
    });
    // Validated before anything starts: the refusals first, so no conversation is made by them.
    const plugin = await call('POST', '/api/v1/app-conversations', { body: body({ plugins: [{ name: 'x' }] }) });
    expect(plugin.status).toBe(422);
    expect(JSON.stringify(plugin.body.detail)).toContain('plugins');
    const profile = await call('POST', '/api/v1/app-conversations', { body: body({ agent_profile_id: 'p1' }) });
    expect(profile.status).toBe(422);
    expect(JSON.stringify(profile.body.detail)).toContain('agent_profile_id');
    const before = (await call('GET', '/api/v1/app-conversations/count')).body;
    llm.enqueue(reply.finish('started from the composer'));
    const started = await call('POST', '/api/v1/app-conversations', { body: body({}) });
    expect(started.status).toBe(200);
    const task = await waitFor(
      'the start task',
      async () => (await call('GET', `/api/v1/app-conversations/start-tasks?ids=${started.body.id}`)).body[0],
      { until: (t: any) => t.status === 'READY' || t.status === 'ERROR', timeoutMs: 30_000 },
    );
    expect(task.status).toBe('READY');
    expect((await call('GET', '/api/v1/app-conversations/count')).body).toBe(before + 1);
    // Gone again, so the counts of the other tests stay as they were.
    expect((await call('DELETE', `/api/conversations/${task.app_conversation_id}`)).status).toBe(200);
  });
});

describe("Canvas's local mode: the agent server's reads with a conversation's key", () => {
  it('GET /api/settings answers the conversation key with its conversation only; the user key keeps the masked settings', async () => {
    const view = await call('GET', '/api/settings', { key: keyA });
    expect(view.status).toBe(200);
    expect(view.body).toEqual({
      agent_settings: { agent: 'CodeActAgent', llm: { model: 'm' } },
      conversation_settings: { confirmation_mode: false },
      llm_model: 'm',
      agent: 'CodeActAgent',
      confirmation_mode: false,
      misc_settings: { app_preferences: { user_consents_to_analytics: false } },
    });
    expect((await call('GET', '/api/settings')).body).toMatchObject({ llm_model: 'm', llm_api_key_set: true });
    // Another user's key: their own settings (none stored), nothing of the dev user's.
    const malloryView = await call('GET', '/api/settings', { key: mallory });
    expect(malloryView.status).toBe(404); // mallory stored none
  });

  it('search, count and ?ids= with the conversation key: its own conversation, in the agent server shape', async () => {
    const search = await call('GET', '/api/conversations/search?sort_order=UPDATED_AT_DESC&limit=20', { key: keyA });
    expect(search.status).toBe(200);
    expect(search.body.items.map((c: any) => c.id)).toEqual([a]);
    expect(search.body.items[0]).toMatchObject({ execution_status: 'finished', agent: { llm: { model: 'm' } } });
    expect(search.body.next_page_id).toBeNull();
    expect((await call('GET', '/api/conversations/search?status=running', { key: keyA })).body.items).toEqual([]);
    expect((await call('GET', '/api/conversations/count', { key: keyA })).body).toBe(1);
    expect((await call('GET', '/api/conversations/count?status=running', { key: keyA })).body).toBe(0);
    const batch = await call('GET', `/api/conversations?ids=${b}&ids=${a}`, { key: keyA });
    expect(batch.body.map((c: any) => c?.id ?? null)).toEqual([null, a]);
    const list = await call('GET', '/api/conversations', { key: keyA });
    expect(list.status).toBe(422);
    expect(list.text).toContain('ids');
  });

  it("with the user's key: every conversation, sorted as asked within the page; ?ids= in order, null for a foreign one", async () => {
    const created = await call('GET', '/api/conversations/search?sort_order=CREATED_AT');
    const ids = created.body.items.map((c: any) => c.id);
    expect([...ids].sort()).toEqual([a, b].sort());
    const times = created.body.items.map((c: any) => c.created_at);
    expect(times).toEqual([...times].sort());
    expect((await call('GET', '/api/conversations/count')).body).toBe(2);
    expect((await call('GET', '/api/conversations/count?status=finished')).body).toBe(2);
    expect((await call('GET', '/api/conversations/search?sort_order=SIDEWAYS')).status).toBe(422);
    const batch = await call('GET', `/api/conversations?ids=${b}&ids=0123456789abcdef0123456789abcdef&ids=${a}`);
    expect(batch.body.map((c: any) => c?.id ?? null)).toEqual([b, null, a]);
    // Another user: none of the dev user's conversations.
    expect((await call('GET', '/api/conversations/search', { key: mallory })).body.items).toEqual([]);
    expect((await call('GET', `/api/conversations?ids=${a}`, { key: mallory })).body).toEqual([null]);
    expect((await call('GET', '/api/conversations/count', { key: mallory })).body).toBe(0);
    // The legacy list without ids keeps its shape (the late-2025 UI).
    expect((await call('GET', '/api/conversations')).body.results).toHaveLength(2);
  });
});

describe('a conversation opened in Canvas: /api/v1/conversation/{id}/events/search', () => {
  it("serves the conversation's events in order, with sort_order, limit and page_id", async () => {
    const got = await call('GET', `/api/v1/conversation/${a}/events/search?limit=100`);
    expect(got.status).toBe(200);
    const same = await call('GET', `/api/conversations/${a}/events/search?limit=100`);
    expect(got.body.items).toEqual(same.body.items);
    expect(got.body.items.length).toBeGreaterThan(2);
    expect(got.body.items.some((e: any) => e.kind === 'MessageEvent' && e.source === 'user')).toBe(true);
    const desc = await call('GET', `/api/v1/conversation/${a}/events/search?sort_order=TIMESTAMP_DESC&limit=2`);
    expect(desc.body.items.map((e: any) => e.id)).toEqual(
      got.body.items
        .slice(-2)
        .reverse()
        .map((e: any) => e.id),
    );
    const next = await call(
      'GET',
      `/api/v1/conversation/${a}/events/search?sort_order=TIMESTAMP_DESC&limit=2&page_id=${encodeURIComponent(desc.body.next_page_id)}`,
    );
    expect(next.body.items.map((e: any) => e.id)).toEqual(
      got.body.items
        .slice(-4, -2)
        .reverse()
        .map((e: any) => e.id),
    );
    // Canvas's reconnect window: strictly before the newest event's timestamp.
    const last = got.body.items.at(-1);
    const before = await call(
      'GET',
      `/api/v1/conversation/${a}/events/search?timestamp__lt=${encodeURIComponent(last.timestamp)}`,
    );
    expect(before.body.items.every((e: any) => e.timestamp < last.timestamp)).toBe(true);
  });
});

describe("the late-2025 web UI's remaining calls", () => {
  it("GET /api/conversations/{id}/config: the conversation's sandbox as runtime_id", async () => {
    const view = (await conversation(stack, a))!;
    const got = await call('GET', `/api/conversations/${a}/config`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ runtime_id: view.sandbox_id, session_id: a });
    expect(view.sandbox_id).toBeTruthy();
    expect((await call('GET', `/api/conversations/${a}/config`, { key: keyA })).status).toBe(200);
    expect((await call('GET', `/api/conversations/${b}/config`, { key: keyA })).status).toBe(403);
    expect((await call('GET', `/api/conversations/${a}/config`, { key: mallory })).status).toBe(404);
  });

  it('secrets: names and descriptions only; create, rename, describe, delete; duplicates and unknown names refused', async () => {
    const user = await stack.newUser('secrets-ui');
    const secrets = () => call('GET', '/api/secrets', { key: user });
    expect((await secrets()).body).toEqual({ custom_secrets: [] });
    const created = await call('POST', '/api/secrets', {
      key: user,
      body: { name: 'NPM_TOKEN', value: SECRET_VALUE, description: 'publishes' },
    });
    expect(created.status).toBe(201);
    expect((await secrets()).body).toEqual({ custom_secrets: [{ name: 'NPM_TOKEN', description: 'publishes' }] });
    const settingsView = await call('GET', '/api/settings', { key: user });
    expect(settingsView.body.secrets_store.custom_secrets.NPM_TOKEN).toEqual({
      secret: null,
      description: 'publishes',
    });
    const dup = await call('POST', '/api/secrets', { key: user, body: { name: 'NPM_TOKEN', value: 'other' } });
    expect(dup.status).toBe(409);
    const badName = await call('POST', '/api/secrets', { key: user, body: { name: 'not a name', value: 'v' } });
    expect(badName.status).toBe(422);
    expect(JSON.stringify(badName.body.detail)).toContain('name');
    expect((await call('POST', '/api/secrets', { key: user, body: { name: 'EMPTY', value: '' } })).status).toBe(422);

    const stored = async (name: string) =>
      (await stack.services.settings.resolve('secrets-ui'))?.secrets_store.custom_secrets[name]?.secret;
    expect(await stored('NPM_TOKEN')).toBe(SECRET_VALUE);
    // Rename keeps the value; a description-only change too.
    const renamed = await call('PUT', '/api/secrets/NPM_TOKEN', {
      key: user,
      body: { name: 'NODE_AUTH_TOKEN', description: 'renamed' },
    });
    expect(renamed.status).toBe(200);
    expect((await secrets()).body.custom_secrets).toEqual([{ name: 'NODE_AUTH_TOKEN', description: 'renamed' }]);
    expect(await stored('NODE_AUTH_TOKEN')).toBe(SECRET_VALUE);
    expect(await stored('NPM_TOKEN')).toBeUndefined();
    await call('PUT', '/api/secrets/NODE_AUTH_TOKEN', {
      key: user,
      body: { name: 'NODE_AUTH_TOKEN', description: 'd2' },
    });
    expect((await secrets()).body.custom_secrets).toEqual([{ name: 'NODE_AUTH_TOKEN', description: 'd2' }]);
    expect(await stored('NODE_AUTH_TOKEN')).toBe(SECRET_VALUE);
    // Renaming onto a taken name, or an unknown secret, is refused and changes nothing.
    await call('POST', '/api/secrets', { key: user, body: { name: 'OTHER', value: 'o' } });
    expect((await call('PUT', '/api/secrets/OTHER', { key: user, body: { name: 'NODE_AUTH_TOKEN' } })).status).toBe(
      409,
    );
    expect((await call('PUT', '/api/secrets/NOPE', { key: user, body: { name: 'NOPE2' } })).status).toBe(404);
    expect(await stored('NODE_AUTH_TOKEN')).toBe(SECRET_VALUE);
    expect(await stored('OTHER')).toBe('o');
    // Another user sees none of them and deletes none of them.
    expect((await call('GET', '/api/secrets', { key: mallory })).body.custom_secrets).toEqual([]);
    expect((await call('DELETE', '/api/secrets/OTHER', { key: mallory })).status).toBe(404);
    expect((await call('PUT', '/api/secrets/OTHER', { key: mallory, body: { name: 'STOLEN' } })).status).toBe(404);
    expect(await stored('OTHER')).toBe('o');
    expect((await call('DELETE', '/api/secrets/OTHER', { key: user })).status).toBe(200);
    expect((await call('DELETE', '/api/secrets/OTHER', { key: user })).status).toBe(404);
    expect((await secrets()).body.custom_secrets.map((s: any) => s.name)).toEqual(['NODE_AUTH_TOKEN']);
  });

  it("Agent Canvas's /api/v1/secrets: the same secrets; its POST sets a value, new or not", async () => {
    const user = await stack.newUser('secrets-canvas');
    const stored = async (name: string) =>
      (await stack.services.settings.resolve('secrets-canvas'))?.secrets_store.custom_secrets[name]?.secret;
    expect((await call('GET', '/api/v1/secrets/search?limit=100', { key: user })).body).toEqual({
      items: [],
      next_page_id: null,
    });
    const set = (value: string, description?: string) =>
      call('POST', '/api/v1/secrets', { key: user, body: { name: 'API_TOKEN', value, description } });
    expect((await set(SECRET_VALUE, 'first')).status).toBe(200);
    expect((await set(`${SECRET_VALUE}-2`, 'second')).status).toBe(200);
    expect(await stored('API_TOKEN')).toBe(`${SECRET_VALUE}-2`);
    const listed = await call('GET', '/api/v1/secrets/search?limit=100', { key: user });
    expect(listed.body.items).toEqual([{ name: 'API_TOKEN', description: 'second' }]);
    // The legacy page lists the same secret.
    expect((await call('GET', '/api/secrets', { key: user })).body.custom_secrets).toEqual(listed.body.items);
    const renamed = await call('PUT', '/api/v1/secrets/API_TOKEN', { key: user, body: { name: 'API_KEY' } });
    expect(renamed.status).toBe(200);
    expect(await stored('API_KEY')).toBe(`${SECRET_VALUE}-2`);
    expect((await call('DELETE', '/api/v1/secrets/API_KEY', { key: mallory })).status).toBe(404);
    expect((await call('DELETE', '/api/v1/secrets/API_KEY', { key: user })).status).toBe(200);
    expect((await call('GET', '/api/v1/secrets/search', { key: user })).body.items).toEqual([]);
    expect((await call('POST', '/api/v1/secrets', { key: user, body: { name: '1BAD', value: 'v' } })).status).toBe(422);
    for (const [method, path] of [
      ['GET', '/api/v1/secrets/search'],
      ['POST', '/api/v1/secrets'],
      ['PUT', '/api/v1/secrets/PLANTED'],
      ['DELETE', '/api/v1/secrets/PLANTED'],
    ] as const)
      expect(
        (await call(method, path, { key: keyA, body: method === 'GET' ? undefined : { name: 'X', value: 'y' } }))
          .status,
        path,
      ).toBe(403);
  });

  it('racing creates of one name: exactly one is stored, the others are 409', async () => {
    const user = await stack.newUser('secrets-race');
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call('POST', '/api/secrets', { key: user, body: { name: 'RACED', value: `value-${i}` } }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(11);
    const winner = statuses.indexOf(201);
    const value = (await stack.services.settings.resolve('secrets-race'))?.secrets_store.custom_secrets.RACED?.secret;
    expect(value).toBe(`value-${winner}`);
  });

  it('git providers: stored sealed (an empty token keeps the stored one), unset removes them all', async () => {
    const user = await stack.newUser('git-ui');
    const add = (body: unknown) => call('POST', '/api/add-git-providers', { key: user, body });
    expect((await add({ provider_tokens: { github: { token: GIT_TOKEN, host: 'github.com' } } })).status).toBe(200);
    const token = async () =>
      (await stack.services.settings.resolve('git-ui'))?.secrets_store.provider_tokens.github?.token;
    expect(await token()).toBe(GIT_TOKEN);
    expect((await call('GET', '/api/settings', { key: user })).body.provider_tokens_set).toEqual({
      github: 'github.com',
    });
    expect((await add({ provider_tokens: { github: { token: '', host: 'ghe.example.com' } } })).status).toBe(200);
    expect(await token()).toBe(GIT_TOKEN);
    expect((await call('GET', '/api/settings', { key: user })).body.provider_tokens_set).toEqual({
      github: 'ghe.example.com',
    });
    // An empty token for a provider with nothing stored stores nothing.
    await add({ provider_tokens: { gitlab: { token: '', host: null } } });
    expect(Object.keys((await call('GET', '/api/settings', { key: user })).body.provider_tokens_set)).toEqual([
      'github',
    ]);
    expect((await add({ provider_tokens: { notaprovider: { token: 'x' } } })).status).toBe(422);
    expect((await call('POST', '/api/unset-provider-tokens', { key: user })).status).toBe(200);
    expect((await call('GET', '/api/settings', { key: user })).body.provider_tokens_set).toEqual({});
    expect(await token()).toBeUndefined();
  });

  it('a conversation key touches none of them', async () => {
    expect((await call('GET', '/api/secrets', { key: keyA })).status).toBe(403);
    expect((await call('POST', '/api/secrets', { key: keyA, body: { name: 'X', value: 'y' } })).status).toBe(403);
    expect((await call('DELETE', '/api/secrets/PLANTED', { key: keyA })).status).toBe(403);
    expect((await call('PUT', '/api/secrets/PLANTED', { key: keyA, body: { name: 'Y' } })).status).toBe(403);
    expect((await call('POST', '/api/unset-provider-tokens', { key: keyA })).status).toBe(403);
    expect(
      (
        await call('POST', '/api/add-git-providers', {
          key: keyA,
          body: { provider_tokens: { github: { token: 't' } } },
        })
      ).status,
    ).toBe(403);
    expect((await call('GET', '/api/secrets')).body.custom_secrets.map((s: any) => s.name)).toEqual(['PLANTED']);
  });
});

// The Files and Changes tabs (Canvas cloud mode) and the late-2025 UI's git routes: reads of the
// workspace over the bridge (a request/reply command the real sandbox program answers), a paused
// sandbox's read from its archived workspace, and what a hostile user, member or agent gets.
describe('workspace reads (Files and Changes tabs, the late UI git routes)', () => {
  const workspaceOf = (sandboxId: string) => join(stack.dataDir, 'sandboxes', sandboxId, 'workspace');
  const files = (id: string, path: string, key?: string | null) =>
    call('GET', `/api/v1/app-conversations/${id}/files?path=${encodeURIComponent(path)}`, { key });
  const file = (id: string, path: string, key?: string | null) =>
    call('GET', `/api/v1/app-conversations/${id}/file?file_path=${encodeURIComponent(path)}`, { key });
  const gitEnv = {
    ...process.env,
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@x',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@x',
  };
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, stdio: 'ignore' });
  const binary = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0xff, 0xfe]);

  /** What the agent left in a workspace: text, bytes, a large file, links out of it, a repository with changes. */
  function plant(dir: string) {
    mkdirSync(join(dir, 'src'), { recursive: true });
    mkdirSync(join(dir, 'node_modules', 'x'), { recursive: true });
    writeFileSync(join(dir, 'hello.txt'), 'hello\n');
    writeFileSync(join(dir, 'src', 'app.ts'), 'export const x = 1;\n');
    writeFileSync(join(dir, 'node_modules', 'x', 'index.js'), '');
    writeFileSync(join(dir, 'image.png'), binary);
    writeFileSync(join(dir, 'big.txt'), 'x'.repeat(300 * 1024));
    symlinkSync('/etc/hostname', join(dir, 'leak'));
    symlinkSync('/etc', join(dir, 'etcdir'));
    symlinkSync('../..', join(dir, 'up'));
    // A link to the program's own state (the conversations' agent state) is no way into it either.
    symlinkSync('.sandbox-state', join(dir, 'state'));
    const repo = join(dir, 'repo');
    mkdirSync(repo);
    git(repo, 'init', '-q');
    writeFileSync(join(repo, 'a.txt'), 'one\n');
    writeFileSync(join(repo, 'c.txt'), 'gone\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-qm', 'first');
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    writeFileSync(join(repo, 'b.txt'), 'new\n');
    git(repo, 'rm', '-q', 'c.txt');
  }

  beforeAll(() => {
    plant(workspaceOf(sandboxA));
    plant(workspaceOf(sandboxB));
  });

  it('lists the workspace as Canvas reads it: files under a directory, relative, sorted, build output and the program state skipped, links not followed', async () => {
    const root = await files(a, '/workspace/project');
    expect(root.status, root.text).toBe(200);
    expect(root.body).toEqual(
      expect.arrayContaining(['hello.txt', 'src/app.ts', 'image.png', 'repo/a.txt', 'repo/b.txt']),
    );
    expect(root.body).not.toContain('leak');
    expect(
      root.body.some(
        (f: string) => f.startsWith('node_modules/') || f.startsWith('.sandbox-state') || f.startsWith('repo/.git/'),
      ),
    ).toBe(false);
    expect([...root.body].sort()).toEqual(root.body);
    expect((await files(a, 'src')).body).toEqual(['app.ts']);
    expect((await files(a, '/workspace/project/src', keyA)).body).toEqual(['app.ts']);
    expect((await files(a, 'nothing-here')).status).toBe(404);
    expect((await files(a, 'hello.txt')).status).toBe(400);
    // A link that leads out of the workspace is not a way out, as a directory either.
    expect((await files(a, 'etcdir')).status).toBe(404);
    expect((await files(a, 'up')).status).toBe(404);
    expect((await files(a, 'state')).status).toBe(404);
    // A listing stops at 2000 files (what Canvas shows at most).
    const many = join(workspaceOf(sandboxA), 'many');
    mkdirSync(many);
    for (let i = 0; i < 2001; i++) writeFileSync(join(many, `f${String(i).padStart(4, '0')}`), '');
    const capped = await files(a, 'many');
    expect(capped.body).toHaveLength(2000);
    expect(capped.body[0]).toBe('f0000');
    rmSync(many, { recursive: true });
  });

  it('reads a file: text as text/plain, bytes as application/octet-stream, at most 256 KiB, never through a link out', async () => {
    const text = await file(a, '/workspace/project/hello.txt');
    expect(text.status).toBe(200);
    expect(text.headers.get('content-type')).toContain('text/plain');
    expect(text.text).toBe('hello\n');
    expect((await file(a, 'src/app.ts', keyA)).text).toBe('export const x = 1;\n');
    const res = await fetch(`${stack.url}/api/v1/app-conversations/${a}/file?file_path=image.png`, {
      headers: { 'x-session-api-key': stack.devKey },
    });
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(binary);
    const big = await file(a, 'big.txt');
    expect(big.status).toBe(413);
    expect(big.body.detail).toContain(String(300 * 1024));
    // `up` leads to the sandboxes' folder (uncontained) or out of the sandbox's mounts (contained): never followed.
    for (const path of [
      'leak',
      'etcdir/hostname',
      `up/${sandboxB}/workspace/hello.txt`,
      `.sandbox-state/conversations/${a}/ready`,
      `state/conversations/${a}/ready`,
      'missing.txt',
    ])
      expect((await file(a, path)).status, path).toBe(404);
    expect((await file(a, 'src')).status).toBe(400);
  });

  it('refuses paths that are not in the workspace, naming the field (422)', async () => {
    for (const path of [
      '../secret',
      '/etc/passwd',
      '/workspace/project/../../etc/passwd',
      'a\0b',
      `${'d/'.repeat(2100)}f`,
    ]) {
      const res = await file(a, path);
      expect(res.status, path.slice(0, 40)).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['query', 'file_path']);
    }
    expect((await files(a, '/workspace/other')).status).toBe(422);
  });

  it("serves git changes and a file's diff: Canvas's routes and the late UI's on the conversation host", async () => {
    const expected = [
      { status: 'ADDED', path: 'b.txt' },
      { status: 'DELETED', path: 'c.txt' },
      { status: 'UPDATED', path: 'a.txt' },
    ];
    const canvas = await call('GET', `/api/v1/app-conversations/${a}/git/changes?path=/workspace/project/repo`);
    expect(canvas.status, canvas.text).toBe(200);
    expect(canvas.body).toEqual(expect.arrayContaining(expected));
    expect(canvas.body).toHaveLength(3);
    // The workspace root is no repository: the one below it is reported under its folder.
    const root = await call('GET', `/api/v1/app-conversations/${a}/git/changes?path=/workspace/project`);
    expect(root.body).toEqual(expect.arrayContaining([{ status: 'UPDATED', path: 'repo/a.txt' }]));
    const diff = await call('GET', `/api/v1/app-conversations/${a}/git/diff?path=/workspace/project/repo/a.txt`);
    expect(diff.body).toEqual({ original: 'one\n', modified: 'two\n' });
    // The late UI: encodeURIComponent of the path, the conversation's own key.
    const late = await call('GET', `/api/git/changes/${encodeURIComponent('/workspace/project/repo')}`, { key: keyA });
    expect(late.status, late.text).toBe(200);
    expect(late.body).toEqual(expect.arrayContaining(expected));
    const lateDiff = await call('GET', `/api/git/diff/${encodeURIComponent('/workspace/project/repo/c.txt')}`, {
      key: keyA,
    });
    expect(lateDiff.body).toEqual({ original: 'gone\n', modified: '' });
    // User credentials name the conversation; a conversation key may not name another.
    expect((await call('GET', `/api/git/changes/${encodeURIComponent('/workspace/project/repo')}`)).status).toBe(422);
    expect((await call('GET', `/api/git/changes/repo?conversation_id=${a}`)).body).toEqual(
      expect.arrayContaining(expected),
    );
    expect((await call('GET', `/api/git/changes/repo?conversation_id=${b}`, { key: keyA })).status).toBe(403);
    expect((await call('GET', `/api/git/changes/${encodeURIComponent('/etc')}`, { key: keyA })).status).toBe(422);
  });

  it("another user and another member of the same organization get 404 for the conversation; A's key is refused on B's", async () => {
    const memberKey = await stack.newUser('canvas-member');
    const orgId = await stack.orgOf();
    await stack.orgOf(memberKey);
    const accounts = new DynamoAccountStore();
    const member = (await accounts.getUser('canvas-member'))!;
    expect(await accounts.replaceUser({ ...member, orgId, role: 'member' })).toBe(true);
    stack.services.accounts.forget('canvas-member');
    expect(await stack.orgOf(memberKey)).toBe(orgId);
    for (const key of [mallory, memberKey]) {
      expect((await files(a, '')).status).toBe(200);
      expect((await files(a, '', key)).status).toBe(404);
      expect((await file(a, 'hello.txt', key)).status).toBe(404);
      expect((await call('GET', `/api/v1/app-conversations/${a}/git/changes?path=repo`, { key })).status).toBe(404);
      expect((await call('GET', `/api/git/changes/repo?conversation_id=${a}`, { key })).status).toBe(404);
    }
    expect((await files(b, '', keyA)).status).toBe(403);
    expect((await file(b, 'hello.txt', keyA)).status).toBe(403);
    expect((await files(a, '', null)).status).toBe(401);
  });

  it("a hostile agent's replies are refused (another request, conversation or sandbox's key, too large, twice); a silent one is a 504", async () => {
    const store = new DynamoSandboxStore();
    const pid = Number((await store.get(sandboxA))!.runtimeRef);
    const keyOfA = (await stack.sandboxKey(sandboxA))!;
    const keyOfB = (await stack.sandboxKey(sandboxB))!;
    const reply = (seq: number, body: unknown, key = keyOfA, sandboxId = sandboxA) =>
      call('POST', fillPath('reply', { sandbox_id: sandboxId, seq }), { key, body });
    // The program stops answering (as a hung or hostile one would); this test answers in its place.
    process.kill(-pid, 'SIGSTOP');
    try {
      const silent = file(a, 'hello.txt');
      const answered = file(a, 'src/app.ts');
      const queued = await waitFor('two queued reads', () => store.listCommands(sandboxA, 10), {
        until: (cs) => cs.filter((c) => c.type === 'workspace_read').length === 2,
      });
      const reads = queued
        .filter((c) => c.type === 'workspace_read')
        .map((c) => ({ seq: c.seq, ...JSON.parse(c.payload!) }));
      const first = reads.find((r) => r.path === 'hello.txt')!;
      const second = reads.find((r) => r.path === 'src/app.ts')!;
      const good = {
        request_id: second.request_id,
        conversation_id: a,
        result: { op: 'file', content_base64: Buffer.from('from the agent').toString('base64') },
      };
      expect((await reply(second.seq, { ...good, request_id: first.request_id })).status).toBe(409);
      expect((await reply(second.seq, { ...good, conversation_id: b })).status).toBe(409);
      expect((await reply(second.seq, good, keyOfB)).status).toBe(401);
      expect((await reply(second.seq, good, keyOfB, sandboxB)).status).toBe(404);
      expect((await reply(second.seq, good, keyA)).status).toBe(401);
      const huge = { ...good, result: { op: 'file', content_base64: 'A'.repeat(400 * 1024) } };
      expect((await reply(second.seq, huge)).status).toBe(413);
      expect(
        (await reply(second.seq, { ...good, result: { op: 'list', files: ['../../etc/passwd'.repeat(2000)] } })).status,
      ).toBe(422);
      expect((await reply(999_999, good)).status).toBe(404);
      expect((await reply(second.seq, good)).status).toBe(200);
      expect((await answered).text).toBe('from the agent');
      // Taken: the command left the queue with it, so a second reply finds nothing to answer.
      expect((await reply(second.seq, good)).status).toBe(404);
      const timedOut = await silent;
      expect(timedOut.status).toBe(504);
      expect(timedOut.body.detail).toContain('did not answer');
      // Both left the queue: a program that comes back does not read for nobody.
      expect((await store.listCommands(sandboxA, 10)).filter((c) => c.type === 'workspace_read')).toEqual([]);
    } finally {
      process.kill(-pid, 'SIGCONT');
    }
    expect((await file(a, 'hello.txt')).text).toBe('hello\n');
  }, 30_000);

  it("a paused sandbox's workspace is read from its archive: files yes, git changes 409 (resume first)", async () => {
    expect((await call('POST', `/api/v1/sandboxes/${sandboxB}/pause`)).status).toBe(200);
    await waitFor('B paused', async () => (await new DynamoSandboxStore().get(sandboxB))?.status, {
      until: (s) => s === 'PAUSED',
    });
    const listed = await files(b, '/workspace/project');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toEqual(expect.arrayContaining(['hello.txt', 'src/app.ts', 'repo/a.txt']));
    expect(
      listed.body.some((f: string) => f.startsWith('node_modules/') || f.startsWith('.sandbox-state') || f === 'leak'),
    ).toBe(false);
    expect((await files(b, 'src')).body).toEqual(['app.ts']);
    expect((await file(b, 'hello.txt')).text).toBe('hello\n');
    expect((await file(b, 'big.txt')).status).toBe(413);
    for (const path of ['leak', 'etcdir/hostname', 'missing.txt', '.sandbox-state/conversations'])
      expect((await file(b, path)).status, path).toBe(404);
    expect((await file(b, 'src')).status).toBe(400);
    expect((await call('GET', `/api/v1/app-conversations/${b}/git/changes?path=repo`)).status).toBe(409);
    expect((await files(b, '', mallory)).status).toBe(404);
  });
});

describe('hostile callers on the new paths', () => {
  const conversationPaths = (id: string) => [
    `/api/v1/conversation/${id}/events/search`,
    `/api/v1/app-conversations/${id}/skills`,
  ];
  const userPaths = [
    '/api/v1/settings',
    '/api/organizations/x/me',
    '/api/organizations/x/profiles',
    '/api/organizations/x/provider-connections',
    '/api/v1/settings/agent-schema',
    '/api/v1/settings/conversation-schema',
    '/api/v1/settings/profiles',
    '/api/agent-profiles',
    '/api/v1/config/models/search',
    '/api/v1/config/providers/search',
    '/api/v1/skills/search',
  ];

  it("another user's conversation id is a 404 on each conversation path (as an unknown id is)", async () => {
    for (const path of conversationPaths(a)) {
      const res = await call('GET', path, { key: mallory });
      expect(res.status, path).toBe(404);
      expect(res.text).not.toContain('"kind"');
    }
    for (const path of conversationPaths('0123456789abcdef0123456789abcdef'))
      expect((await call('GET', path)).status, path).toBe(404);
    expect((await call('GET', '/api/v1/conversation/..%2F..%2Fsettings/events/search')).status).toBe(422);
  });

  it("conversation A's key reads A's paths and is refused on B's", async () => {
    for (const path of conversationPaths(a)) expect((await call('GET', path, { key: keyA })).status, path).toBe(200);
    for (const path of conversationPaths(b)) expect((await call('GET', path, { key: keyA })).status, path).toBe(403);
  });

  it("a conversation key reads none of the user's settings, schemas or lists, and writes no settings", async () => {
    for (const path of userPaths) expect((await call('GET', path, { key: keyA })).status, path).toBe(403);
    const write = await call('POST', '/api/v1/settings', {
      key: keyA,
      body: { agent_settings_diff: { llm: { base_url: 'http://attacker.example/v1' } } },
    });
    expect(write.status).toBe(403);
    expect((await call('GET', '/api/settings')).body.llm_base_url).toBe(llm.baseUrl);
  });

  it('no credentials: 401 on every new path', async () => {
    for (const path of [...userPaths, ...conversationPaths(a)])
      expect((await call('GET', path, { key: null })).status, path).toBe(401);
  });

  it('no planted secret appears in any answer of this file', () => {
    expect(answers.length).toBeGreaterThan(40);
    for (const text of answers) for (const secret of planted) expect(text).not.toContain(secret);
  });
});
