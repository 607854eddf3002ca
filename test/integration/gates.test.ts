import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { startConversation, waitForExecutionStatus } from '#test/helpers/conversations.ts';
import { startAgentStack, type AgentStack } from '#test/helpers/agent-stack.ts';
import { reply, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import type { TestStack } from '#test/helpers/stack.ts';

/**
 * The OpenHands web UI's gates over real HTTP against the local stack: options, browser sign-in
 * with a session cookie, CORS, the legacy conversation routes, conversation-scoped keys, API keys
 * over the API, and the docs page.
 */
const UI_ORIGIN = 'http://ui.example.test';
const EVIL_ORIGIN = 'http://evil.example.test';

let agent: AgentStack;
let stack: TestStack;
let llm: ScriptedLlm;
const savedEnv = { CORS_ORIGINS: process.env.CORS_ORIGINS, SESSION_HOURS: process.env.SESSION_HOURS };

beforeAll(async () => {
  process.env.CORS_ORIGINS = `${UI_ORIGIN}, http://other-ui.example.test`;
  // No settings for the dev user: the tests that need them make a user with their own.
  agent = await startAgentStack({ settings: null });
  ({ stack, llm } = agent);
});
afterAll(async () => {
  await agent?.stop();
  for (const [k, v] of Object.entries(savedEnv))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
});

async function userWithSettings(name: string): Promise<string> {
  const key = await stack.newUser(name);
  await agent.saveSettings({}, key);
  return key;
}

const message = (text: string) => ({ initial_message: { content: [{ type: 'text', text }], run: true } });

/** Signs in with an API key and returns the session cookie (`name=value`) and the raw Set-Cookie. */
async function signIn(key: string): Promise<{ cookie: string; setCookie: string; body: any }> {
  const res = await stack.call('POST', '/api/authenticate', { key });
  expect(res.status).toBe(200);
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0]!, setCookie, body: res.body };
}

/** Over plain http the session cookie's name carries the server's port (shared/auth/sessions.ts). */
const cookieName = () => `acs_session_${new URL(stack.url).port}`;

const withCookie = (cookie: string, headers: Record<string, string> = {}) => ({
  key: null,
  headers: { cookie, ...headers },
});

describe('options', () => {
  it('GET /api/options/config: APP_MODE oss and every field the UI reads, without a key', async () => {
    const res = await stack.call('GET', '/api/options/config', { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      APP_MODE: 'oss',
      GITHUB_CLIENT_ID: '',
      POSTHOG_CLIENT_KEY: '',
      PROVIDERS_CONFIGURED: [],
      FEATURE_FLAGS: {
        ENABLE_BILLING: false,
        HIDE_LLM_SETTINGS: false,
        ENABLE_JIRA: false,
        ENABLE_JIRA_DC: false,
        ENABLE_LINEAR: false,
      },
    });
  });

  it('GET /api/options/models: a list of model names the agent can call', async () => {
    const res = await stack.call('GET', '/api/options/models', { key: null });
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThan(0);
    // The user-key models by provider, and the platform's own (config/platform-llms.json).
    for (const model of res.body) expect(model).toMatch(/^(openai|anthropic|platform)\/\S+$/);
    expect(res.body).toContain('platform/claude-sonnet');
  });
});

describe('browser sign-in (session cookie)', () => {
  it('exchanges an API key for an HttpOnly, SameSite=Strict cookie with a bounded lifetime', async () => {
    const { setCookie, body } = await signIn(stack.devKey);
    expect(setCookie).toMatch(
      new RegExp(
        `^${cookieName()}=acss_[0-9a-f]{32}_[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200$`,
      ),
    );
    // Served over plain http here: no Secure (a browser would drop the cookie); https adds it (unit test).
    expect(setCookie).not.toContain('Secure');
    expect(body).toMatchObject({ success: true, user_id: 'dev' });
    const hours = (Date.parse(body.expires_at) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(11.9);
    expect(hours).toBeLessThanOrEqual(12);
  });

  it('the cookie works on user routes from the same origin and from an allowed origin', async () => {
    const { cookie } = await signIn(stack.devKey);
    const sameOriginRead = await stack.call(
      'GET',
      '/api/v1/users/me',
      withCookie(cookie, { 'sec-fetch-site': 'same-origin' }),
    );
    expect(sameOriginRead.status).toBe(200);
    expect(sameOriginRead.body.id).toBe('dev');
    expect((await stack.call('GET', '/api/v1/users/me', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(200);
    const write = await stack.call('POST', '/api/settings', {
      ...withCookie(cookie, { origin: UI_ORIGIN }),
      body: { max_iterations: 42 },
    });
    expect(write.status).toBe(200);
    const ownOrigin = await stack.call('POST', '/api/settings', {
      ...withCookie(cookie, { origin: stack.url }),
      body: { max_iterations: 43 },
    });
    expect(ownOrigin.status).toBe(200);
    expect((await stack.call('GET', '/api/settings')).body.max_iterations).toBe(43);
  });

  it('refuses cross-site use: a foreign or missing Origin on a write, a cross-site read', async () => {
    const { cookie } = await signIn(stack.devKey);
    const before = (await stack.call('GET', '/api/settings')).body.max_iterations;
    for (const headers of [
      { origin: EVIL_ORIGIN },
      {},
      { 'sec-fetch-site': 'same-origin' },
      { origin: 'null' },
      { origin: '*' },
    ] as Record<string, string>[]) {
      const res = await stack.call('POST', '/api/settings', {
        ...withCookie(cookie, headers),
        body: { max_iterations: 7 },
      });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.body.detail).toMatch(/Cross-site request refused/);
    }
    expect((await stack.call('GET', '/api/settings')).body.max_iterations).toBe(before);
    const crossSiteRead = await stack.call(
      'GET',
      '/api/settings',
      withCookie(cookie, { 'sec-fetch-site': 'cross-site' }),
    );
    expect(crossSiteRead.status).toBe(403);
    // An origin allowed by CORS as `*` would never count for the cookie: only named ones do.
    expect((await stack.call('GET', '/api/settings', withCookie(cookie, { origin: EVIL_ORIGIN }))).status).toBe(403);
  });

  it('signs out server-side: the same cookie no longer works, even if the browser kept it', async () => {
    const { cookie } = await signIn(stack.devKey);
    const out = await stack.call('POST', '/api/logout', withCookie(cookie, { origin: UI_ORIGIN }));
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toBe(`${cookieName()}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    // Over plain http it also clears a cookie planted under another path (a Set-Cookie cannot name it).
    expect(out.headers.get('clear-site-data')).toBe('"cookies"');
    expect((await stack.call('GET', '/api/settings', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(401);
    // Signing out again (or without a cookie) is harmless.
    expect((await stack.call('POST', '/api/logout', withCookie(cookie, { origin: stack.url }))).status).toBe(200);
    expect((await stack.call('POST', '/api/logout', { key: null })).status).toBe(200);
  });

  it('a session expires after its lifetime', async () => {
    process.env.SESSION_HOURS = String(1 / 3600); // one second
    try {
      const { cookie, setCookie } = await signIn(stack.devKey);
      expect(setCookie).toContain('Max-Age=1');
      expect((await stack.call('GET', '/api/settings', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1500));
      expect((await stack.call('GET', '/api/settings', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(401);
    } finally {
      delete process.env.SESSION_HOURS;
    }
  });

  it('a session ends with the API key it was made from', async () => {
    const key = await stack.newUser('cookie-revoked');
    const { cookie } = await signIn(key);
    expect((await stack.call('GET', '/api/v1/users/me', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(200);
    const [info] = await stack.services.apiKeys.list('cookie-revoked');
    await stack.services.apiKeys.revoke(info!.keyId);
    expect((await stack.call('GET', '/api/v1/users/me', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(401);
  });

  it('signs in only with an API key: not with a cookie, a forged cookie or nothing', async () => {
    const { cookie } = await signIn(stack.devKey);
    expect((await stack.call('POST', '/api/authenticate', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(403);
    expect((await stack.call('POST', '/api/authenticate', { key: null })).status).toBe(401);
    expect(
      (await stack.call('POST', '/api/authenticate', { key: `acs_0000000000000000_${'A'.repeat(43)}` })).status,
    ).toBe(401);
    const forged = cookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    expect((await stack.call('GET', '/api/settings', withCookie(forged, { origin: UI_ORIGIN }))).status).toBe(401);
    expect(
      (await stack.call('GET', '/api/settings', withCookie(`${cookieName()}=../../etc`, { origin: UI_ORIGIN }))).status,
    ).toBe(401);
  });
});

describe('session fixation and forced sign-out (hostile pages on another port or site)', () => {
  it('a request carrying two session cookies is refused, whichever comes first (one was planted)', async () => {
    const victim = (await signIn(stack.devKey)).cookie;
    const attacker = (await signIn(await userWithSettings('fixation-attacker'))).cookie;
    // A page on another port of 127.0.0.1 wrote the attacker's session with a longer path: browsers send it first.
    for (const cookies of [`${attacker}; ${victim}`, `${victim}; ${attacker}`, `${attacker}; ${attacker}`]) {
      for (const [method, path, body] of [
        ['GET', '/api/settings', undefined],
        ['POST', '/api/settings', { llm_api_key: 'sk-typed-by-the-victim' }],
      ] as const) {
        const res = await stack.call(method, path, { ...withCookie(cookies, { origin: stack.url }), body });
        expect(res.status, `${method} ${path} with ${cookies.length} chars of cookies`).toBe(403);
        expect(res.body.detail).toMatch(/More than one session cookie/);
      }
    }
    // The attacker's settings did not receive the victim's key.
    const mine = await stack.call('GET', '/api/settings', withCookie(attacker, { origin: stack.url }));
    expect(mine.body.llm_api_key_set).toBe(true);
    expect(JSON.stringify(mine.body)).not.toContain('sk-typed-by-the-victim');
  });

  it("another port's cookie name never counts here: the session cookie is named for this server's port", async () => {
    const { cookie } = await signIn(stack.devKey);
    const token = cookie.slice(cookie.indexOf('=') + 1);
    for (const name of ['acs_session', 'acs_session_1', '__Host-acs_session'])
      expect(
        (await stack.call('GET', '/api/settings', withCookie(`${name}=${token}`, { origin: stack.url }))).status,
      ).toBe(401);
  });

  it('logout is a cookie write: refused from another site, another port or with no Origin, and the session stays', async () => {
    const { cookie } = await signIn(stack.devKey);
    const otherPort = `http://127.0.0.1:${Number(new URL(stack.url).port) + 1}`;
    const attempts: Record<string, string>[] = [
      { origin: EVIL_ORIGIN },
      { origin: otherPort },
      {},
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of attempts) {
      const res = await stack.call('POST', '/api/logout', withCookie(cookie, headers));
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    expect((await stack.call('GET', '/api/settings', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(200);
    expect((await stack.call('POST', '/api/logout', withCookie(cookie, { origin: stack.url }))).status).toBe(200);
    expect((await stack.call('GET', '/api/settings', withCookie(cookie, { origin: UI_ORIGIN }))).status).toBe(401);
  });
});

describe('CORS', () => {
  it('answers a preflight from an allowed origin on any route, with credentials', async () => {
    for (const path of ['/api/settings', '/api/v1/app-conversations', '/api/conversations/abc', '/nowhere']) {
      const res = await fetch(`${stack.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: UI_ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, x-session-api-key',
        },
      });
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      expect(res.headers.get('access-control-allow-methods')).toContain('PATCH');
      expect(res.headers.get('access-control-allow-headers')).toContain('x-session-api-key');
      expect(res.headers.get('vary')).toBe('Origin');
    }
  });

  it('gives an origin that is not configured no CORS headers, on preflights and on requests', async () => {
    const pre = await fetch(`${stack.url}/api/settings`, {
      method: 'OPTIONS',
      headers: { origin: EVIL_ORIGIN, 'access-control-request-method': 'GET' },
    });
    expect(pre.status).toBe(204);
    expect([...pre.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const res = await stack.call('GET', '/api/settings', { headers: { origin: EVIL_ORIGIN } });
    expect(res.status).toBe(200); // a key in a header is not a browser's ambient credential
    expect([...res.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('adds CORS headers to the responses of an allowed origin, errors included', async () => {
    const ok = await stack.call('GET', '/api/options/config', { key: null, headers: { origin: UI_ORIGIN } });
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-request-id');
    const denied = await stack.call('GET', '/api/settings', { key: null, headers: { origin: UI_ORIGIN } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
  });
});

describe('conversations: legacy routes and conversation-scoped keys', () => {
  let key: string;
  let otherKey: string;
  let id: string;
  let secondId: string;
  let sandboxId: string;
  let scoped: string;

  beforeAll(async () => {
    key = await userWithSettings('carol');
    otherKey = await userWithSettings('dave');
    llm.enqueue(reply.finish('first done'));
    const task = await startConversation(stack, { ...message('first'), trigger: 'gui' }, key);
    id = task.app_conversation_id;
    sandboxId = task.sandbox_id!;
    await waitForExecutionStatus(stack, id, ['finished'], key);
    llm.enqueue(reply.finish('second done'));
    const second = await startConversation(
      stack,
      { ...message('second'), trigger: 'resolver', sandbox_id: sandboxId },
      key,
    );
    secondId = second.app_conversation_id;
    await waitForExecutionStatus(stack, secondId, ['finished'], key);
    // The repository filter: a record as a clone would leave it (cloning needs a git server, tested elsewhere).
    const store = new DynamoConversationStore();
    const rec = (await store.get('carol', secondId))!;
    expect(
      await store.update('carol', secondId, rec.version, {
        selected_repository: 'acme/widget',
        selected_branch: 'main',
        git_provider: 'github',
      }),
    ).toBe(true);
    scoped = (await stack.call('GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0].session_api_key;
  }, 120_000);

  it('shows the conversation-scoped key on the V1 and legacy GETs, and never the sandbox key', async () => {
    expect(scoped).toMatch(/^acsc\.[A-Za-z0-9_-]+\.[0-9a-f]{32}\.1\.[A-Za-z0-9_-]{43}$/);
    const legacy = await stack.call('GET', `/api/conversations/${id}`, { key });
    expect(legacy.body.session_api_key).toBe(scoped);
    const search = await stack.call('GET', '/api/v1/app-conversations/search', { key });
    expect(search.body.items.find((c: any) => c.id === id).session_api_key).toBe(scoped);
    expect(search.body.items.find((c: any) => c.id === secondId).session_api_key).not.toBe(scoped);
    const sandbox = (await stack.call('GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0];
    expect(sandbox.status).toBe('RUNNING');
    expect(sandbox.session_api_key).toBeNull();
    const sandboxKey = await stack.sandboxKey(sandboxId);
    for (const res of [legacy, search, await stack.call('GET', '/api/conversations', { key })])
      expect(res.text).not.toContain(sandboxKey);
  });

  it('GET /api/conversations/{id}: every field the UI reads', async () => {
    const res = await stack.call('GET', `/api/conversations/${id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      conversation_id: id,
      title: 'first',
      selected_repository: null,
      selected_branch: null,
      git_provider: null,
      last_updated_at: expect.any(String),
      created_at: expect.any(String),
      status: 'RUNNING',
      runtime_status: 'STATUS$READY',
      trigger: 'gui',
      url: `${stack.url}/api/conversations/${id}`,
      session_api_key: scoped,
      pr_number: [],
      conversation_version: 'V1',
      sub_conversation_ids: [],
    });
    expect(Date.parse(res.body.created_at)).toBeLessThanOrEqual(Date.parse(res.body.last_updated_at));
    // The dashed form of the id works too; another user's id is a 404, as is an unknown one.
    const dashed = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
    expect((await stack.call('GET', `/api/conversations/${dashed}`, { key })).body.conversation_id).toBe(id);
    expect((await stack.call('GET', `/api/conversations/${id}`, { key: otherKey })).status).toBe(404);
    expect((await stack.call('GET', `/api/conversations/${'0'.repeat(32)}`, { key })).status).toBe(404);
    expect((await stack.call('GET', '/api/conversations/not-an-id', { key })).status).toBe(422);
  });

  it("GET /api/conversations: newest first, paged, filtered by repository and trigger, only the caller's", async () => {
    const all = await stack.call('GET', '/api/conversations', { key });
    expect(all.status).toBe(200);
    expect(all.body.results.map((c: any) => c.conversation_id)).toEqual([secondId, id]);
    expect(all.body.next_page_id).toBeNull();
    const first = await stack.call('GET', '/api/conversations?limit=1', { key });
    expect(first.body.results.map((c: any) => c.conversation_id)).toEqual([secondId]);
    expect(first.body.next_page_id).toEqual(expect.any(String));
    const next = await stack.call(
      'GET',
      `/api/conversations?limit=1&page_id=${encodeURIComponent(first.body.next_page_id)}`,
      { key },
    );
    expect(next.body.results.map((c: any) => c.conversation_id)).toEqual([id]);
    // A cursor is the user's own: another user cannot page through it.
    expect(
      (
        await stack.call('GET', `/api/conversations?limit=1&page_id=${encodeURIComponent(first.body.next_page_id)}`, {
          key: otherKey,
        })
      ).status,
    ).toBe(400);

    const byRepo = await stack.call('GET', '/api/conversations?selected_repository=acme/widget', { key });
    expect(
      byRepo.body.results.map((c: any) => [
        c.conversation_id,
        c.selected_repository,
        c.selected_branch,
        c.git_provider,
      ]),
    ).toEqual([[secondId, 'acme/widget', 'main', 'github']]);
    const byTrigger = await stack.call('GET', '/api/conversations?conversation_trigger=gui', { key });
    expect(byTrigger.body.results.map((c: any) => c.conversation_id)).toEqual([id]);
    expect(
      (
        await stack.call('GET', '/api/conversations?conversation_trigger=resolver&selected_repository=acme/widget', {
          key,
        })
      ).body.results,
    ).toHaveLength(1);
    expect(
      (await stack.call('GET', '/api/conversations?selected_repository=acme/other', { key })).body.results,
    ).toEqual([]);
    expect((await stack.call('GET', '/api/conversations', { key: otherKey })).body.results).toEqual([]);
    expect((await stack.call('GET', '/api/conversations?limit=0', { key })).status).toBe(422);
    expect((await stack.call('GET', '/api/conversations?selected_repository=acme%20widget', { key })).status).toBe(422);
  });

  it('PATCH /api/conversations/{id} renames; only the owner, only a title', async () => {
    const res = await stack.call('PATCH', `/api/conversations/${secondId}`, { key, body: { title: 'Renamed' } });
    expect(res.status).toBe(200);
    expect(res.body).toBe(true);
    expect((await stack.call('GET', `/api/conversations/${secondId}`, { key })).body.title).toBe('Renamed');
    expect(
      (await stack.call('PATCH', `/api/conversations/${secondId}`, { key: otherKey, body: { title: 'Mine now' } }))
        .status,
    ).toBe(404);
    const empty = await stack.call('PATCH', `/api/conversations/${secondId}`, { key, body: { title: '  ' } });
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0].loc).toEqual(['body', 'title']);
    expect(
      (await stack.call('PATCH', `/api/conversations/${secondId}`, { key, body: { title: 'x', sandbox_id: 'y' } }))
        .status,
    ).toBe(422);
    expect((await stack.call('GET', `/api/conversations/${secondId}`, { key })).body.title).toBe('Renamed');
  });

  it("a conversation key works on its own conversation's relay and event routes", async () => {
    const as = { key: scoped };
    const search = await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${id}`, as);
    expect(search.status).toBe(200);
    expect(search.body.items.length).toBeGreaterThan(0);
    expect((await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, as)).body).toBe(
      search.body.items.length,
    );
    // Bearer works as well as the header.
    expect(
      (
        await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, {
          key: null,
          headers: { authorization: `Bearer ${scoped}` },
        })
      ).status,
    ).toBe(200);
    llm.enqueue(reply.finish('again'));
    expect(
      (
        await stack.call('POST', `/api/conversations/${id}/events`, {
          ...as,
          body: { content: [{ type: 'text', text: 'once more' }], run: true },
        })
      ).body,
    ).toEqual({ success: true });
    await waitForExecutionStatus(stack, id, ['finished'], key);
    expect((await stack.call('POST', `/api/conversations/${id}/pause`, as)).body).toEqual({ success: true });
    expect((await stack.call('POST', `/api/conversations/${id}/run`, as)).body).toEqual({ success: true });
    expect(
      (
        await stack.call('POST', `/api/conversations/${id}/events/respond_to_confirmation`, {
          ...as,
          body: { accept: false },
        })
      ).status,
    ).toBe(200);
  });

  it('a conversation key is refused everywhere else: other conversations, settings, keys, sandboxes, the bridge', async () => {
    const as = { key: scoped };
    const refused: [string, string, unknown?][] = [
      ['GET', `/api/v1/events/search?conversation_id__eq=${secondId}`],
      ['GET', `/api/v1/events/count?conversation_id__eq=${secondId}`],
      ['POST', `/api/conversations/${secondId}/pause`],
      ['POST', `/api/conversations/${secondId}/events`, { content: [{ type: 'text', text: 'x' }] }],
      ['POST', '/api/settings', { llm_model: 'stolen' }],
      ['GET', '/api/v1/users/me'],
      ['GET', '/api/keys'],
      ['POST', '/api/keys', { name: 'escalate' }],
      ['POST', '/api/authenticate'],
      ['GET', '/api/v1/sandboxes/search'],
      ['GET', `/api/v1/sandboxes?id=${sandboxId}`],
      ['POST', `/api/v1/sandboxes/${sandboxId}/pause`],
      // A conversation key may read and rename its own conversation (as the agent server's clients do), never delete it.
      ['DELETE', `/api/conversations/${id}`],
      ['GET', `/api/v1/app-conversations?ids=${id}`],
      ['GET', '/api/v1/app-conversations/search'],
      ['POST', '/api/v1/app-conversations', message('new')],
    ];
    for (const [method, path, body] of refused) {
      const res = await stack.call(method, path, { ...as, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.detail, `${method} ${path}`).toMatch(/conversation key is valid only/);
    }
    // Its own conversation's view of the settings (Agent Canvas's local mode): nothing else of the owner's.
    const settings = await stack.call('GET', '/api/settings', as);
    expect(settings.status).toBe(200);
    expect(Object.keys(settings.body).filter((k) => k.endsWith('_set') || k.includes('api_key'))).toEqual([]);
    // The agent server's conversation search asks a conversation key for its own ids.
    expect((await stack.call('GET', '/api/conversations', as)).status).toBe(422);
    // Sandbox routes authenticate the sandbox's own key: a conversation key is just a wrong key.
    const startConfig = await stack.call('GET', `/api/v1/webhooks/${sandboxId}/conversations/${id}/start-config`, as);
    expect(startConfig.status).toBe(401);
    expect((await stack.call('GET', `/api/v1/sandboxes/${sandboxId}/bridge/commands`, as)).status).toBe(401);
    expect((await stack.call('GET', `/api/conversations/${id}`)).status).toBe(404); // the dev user's view: not theirs
  });

  it('a forged or altered conversation key is no key at all', async () => {
    const [prefix, user, conv, version, mac] = scoped.split('.');
    const variants = [
      [prefix, user, conv, version, mac!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))],
      [prefix, user, secondId, version, mac],
      [prefix, Buffer.from('dave').toString('base64url'), conv, version, mac],
      [prefix, user, conv, '2', mac],
      [prefix, user, conv, version],
    ].map((parts) => parts.join('.'));
    for (const forged of variants) {
      expect(
        (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key: forged })).status,
        forged,
      ).toBe(401);
    }
  });

  it('revoking (POST .../session-api-key/revoke) bumps the version: old keys stop, the new one works', async () => {
    const before = (await stack.call('GET', `/api/conversations/${secondId}`, { key })).body.session_api_key;
    expect(
      (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${secondId}`, { key: before })).status,
    ).toBe(200);
    const revokePath = `/api/v1/app-conversations/${secondId}/session-api-key/revoke`;
    expect((await stack.call('POST', revokePath, { key: otherKey })).status).toBe(404);
    expect((await stack.call('POST', revokePath, { key: before })).status).toBe(403); // a key cannot renew itself
    const revoked = await stack.call('POST', revokePath, { key });
    expect(revoked.status).toBe(200);
    expect(
      (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${secondId}`, { key: before })).status,
    ).toBe(401);
    const after = (await stack.call('GET', `/api/conversations/${secondId}`, { key })).body.session_api_key;
    expect(after).toBe(revoked.body.session_api_key);
    expect(after).toMatch(/\.2\./);
    expect(
      (await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${secondId}`, { key: after })).status,
    ).toBe(200);
    // The other conversation's key is untouched.
    expect((await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key: scoped })).status).toBe(
      200,
    );
  });

  it('DELETE /api/conversations/{id}: only the owner; then its key, its GET and its routes are gone', async () => {
    expect((await stack.call('DELETE', `/api/conversations/${id}`, { key: otherKey })).status).toBe(404);
    const res = await stack.call('DELETE', `/api/conversations/${id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toBe(true);
    expect((await stack.call('GET', `/api/conversations/${id}`, { key })).status).toBe(404);
    expect((await stack.call('GET', `/api/v1/app-conversations?ids=${id}`, { key })).body).toEqual([null]);
    expect((await stack.call('GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key: scoped })).status).toBe(
      401,
    );
    expect((await stack.call('POST', `/api/conversations/${id}/pause`, { key })).status).toBe(404);
    expect((await stack.call('DELETE', `/api/conversations/${id}`, { key })).status).toBe(404);
    expect(
      (await stack.call('GET', '/api/conversations', { key })).body.results.map((c: any) => c.conversation_id),
    ).toEqual([secondId]);
    expect((await stack.call('GET', '/api/v1/app-conversations/count', { key })).body).toBe(1);
    // The id stays taken for its owner (a new conversation under it would read the old events); ids are
    // per user, so another user's conversation of that id is another conversation, without those events.
    const again = await stack.call('POST', '/api/v1/app-conversations', {
      key,
      body: { ...message('reuse'), conversation_id: id },
    });
    expect(again.status).toBe(409);
    expect((await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${id}`, { key: otherKey })).status).toBe(
      404,
    );
  });
});

describe('API keys over the API', () => {
  it('creates a key shown once, lists it without the key, and revokes it; each user sees only their own', async () => {
    const alice = await stack.newUser('alice-keys');
    const bob = await stack.newUser('bob-keys');
    const created = await stack.call('POST', '/api/keys', { key: alice, body: { name: 'ci' } });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      name: 'ci',
      prefix: `acs_${created.body.id}`,
      created_at: expect.any(String),
      last_used_at: null,
      expires_at: null,
      key: expect.stringMatching(/^acs_/),
    });
    expect(created.body.key.startsWith(`${created.body.prefix}_`)).toBe(true);
    expect((await stack.call('GET', '/api/v1/users/me', { key: created.body.key })).body.id).toBe('alice-keys');

    const listed = await stack.call('GET', '/api/keys', { key: alice });
    expect(listed.body.map((k: any) => k.name).sort()).toEqual(['ci', 'test']);
    expect(listed.text).not.toContain(created.body.key);
    expect(listed.text).not.toMatch(/hash/);
    for (const k of listed.body)
      expect(Object.keys(k).sort()).toEqual(['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'prefix']);
    expect((await stack.call('GET', '/api/keys', { key: bob })).body.map((k: any) => k.name)).toEqual(['test']);

    expect((await stack.call('DELETE', `/api/keys/${created.body.id}`, { key: bob })).status).toBe(404);
    expect((await stack.call('GET', '/api/v1/users/me', { key: created.body.key })).status).toBe(200);
    expect((await stack.call('DELETE', `/api/keys/${created.body.id}`, { key: alice })).body).toEqual({
      success: true,
      effective_within_seconds: 30,
      detail: 'Revoked: requests with this key are refused within 30 seconds',
    });
    // The local server revoked it itself: its authorizer's copy of the record is gone at once.
    expect((await stack.call('GET', '/api/v1/users/me', { key: created.body.key })).status).toBe(401);
    expect((await stack.call('DELETE', `/api/keys/${created.body.id}`, { key: alice })).status).toBe(404);
    expect((await stack.call('GET', '/api/keys', { key: alice })).body.map((k: any) => k.name)).toEqual(['test']);
  });

  it('rejects bad input with the field named, and ids that are not key ids', async () => {
    const empty = await stack.call('POST', '/api/keys', { body: { name: '' } });
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0].loc).toEqual(['body', 'name']);
    expect((await stack.call('POST', '/api/keys', { body: { name: 'x', user_id: 'someone-else' } })).status).toBe(422);
    expect((await stack.call('DELETE', '/api/keys/system:cursor')).status).toBe(422);
    expect((await stack.call('DELETE', '/api/keys/session:0')).status).toBe(422);
  });

  it('with the session cookie: writes only with an allowed Origin; reads also from a page of this origin (the console)', async () => {
    const key = await stack.newUser('cookie-keys');
    const { cookie } = await signIn(key);
    const listed = await stack.call('GET', '/api/keys', withCookie(cookie, { origin: UI_ORIGIN }));
    expect(listed.status).toBe(200);
    const sameOriginRead = await stack.call(
      'GET',
      '/api/keys',
      withCookie(cookie, { 'sec-fetch-site': 'same-origin' }),
    );
    expect(sameOriginRead.status).toBe(200);
    expect((await stack.call('GET', '/api/keys', withCookie(cookie, { 'sec-fetch-site': 'same-site' }))).status).toBe(
      403,
    );
    expect((await stack.call('GET', '/api/keys', withCookie(cookie))).status).toBe(403);
    expect(
      (
        await stack.call('POST', '/api/keys', {
          ...withCookie(cookie, { 'sec-fetch-site': 'same-origin' }),
          body: { name: 'no origin' },
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await stack.call('POST', '/api/keys', {
          ...withCookie(cookie, { origin: EVIL_ORIGIN }),
          body: { name: 'csrf' },
        })
      ).status,
    ).toBe(403);
    expect((await stack.call('POST', '/api/keys', { ...withCookie(cookie), body: { name: 'csrf' } })).status).toBe(403);
    const made = await stack.call('POST', '/api/keys', {
      ...withCookie(cookie, { origin: UI_ORIGIN }),
      body: { name: 'from the ui' },
    });
    expect(made.status).toBe(200);
    expect(
      (await stack.call('DELETE', `/api/keys/${made.body.id}`, withCookie(cookie, { origin: EVIL_ORIGIN }))).status,
    ).toBe(403);
    expect((await stack.call('GET', '/api/keys', { key })).body.map((k: any) => k.name).sort()).toEqual([
      'from the ui',
      'test',
    ]);
  });
});

describe('docs', () => {
  it('/docs is Swagger UI over /openapi.json, with its files served here', async () => {
    const page = await stack.call('GET', '/docs', { key: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.text).toContain('SwaggerUIBundle');
    expect(page.text).not.toMatch(/https?:\/\//); // nothing from a CDN: works offline
    const srcs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(srcs.sort()).toEqual(['docs/assets/swagger-ui-bundle.js', 'docs/assets/swagger-ui.css']);
    for (const src of srcs) {
      const res = await stack.call('GET', `/${src}`, { key: null });
      expect(res.status, src).toBe(200);
      expect(res.text.length).toBeGreaterThan(10_000);
    }
    const js = await stack.call('GET', '/docs/assets/swagger-ui-bundle.js', { key: null });
    expect(js.headers.get('content-type')).toContain('javascript');
    expect(js.text).toContain('SwaggerUIBundle');
    expect(
      (await stack.call('GET', '/docs/assets/swagger-ui.css', { key: null })).headers.get('content-type'),
    ).toContain('text/css');
    const doc = await stack.call('GET', '/openapi.json', { key: null });
    expect(doc.body.paths['/api/authenticate'].post.security).toEqual([
      { sessionApiKey: [] },
      { bearer: [] },
      { sessionCookie: [] },
    ]);
    expect(doc.body.paths['/api/conversations/{conversation_id}/pause'].post.description).toMatch(/session_api_key/);
    expect(doc.body.paths['/api/keys'].get.description).toBeUndefined();
    // Error answers are shared components ($ref), described once.
    const forbidden = doc.body.paths['/api/settings'].get.responses['403'].$ref.split('/').pop();
    expect(doc.body.components.responses[forbidden].description).toMatch(/conversation key/);
  });

  it('serves only the listed files', async () => {
    for (const file of [
      'package.json',
      '..%2Fpackage.json',
      '..%2F..%2F.data%2Fsecret.key',
      'index.html',
      'swagger-ui.js.map',
      '%2Fetc%2Fpasswd',
    ]) {
      expect((await stack.call('GET', `/docs/assets/${file}`, { key: null })).status, file).toBe(404);
    }
  });
});
