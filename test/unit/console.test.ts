import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { buildConsole, CONSOLE_BUILD_DIR } from '#infra/console-build.ts';
import { consoleAsset, consoleHeaders, consolePage } from '#shared/http/console-assets.ts';
import { failureOf } from '../../console/src/api.ts';
import { lineDiff } from '../../console/src/diff.ts';
import { viewOf, type AnyEvent } from '../../console/src/events.ts';
import {
  acceptFailure,
  actionName,
  actorName,
  entryDetail,
  grantable,
  invitationIn,
  manages,
  memberControls,
} from '../../console/src/organization.ts';
import { bodyOf, draftOf, GROUPS, PROVIDERS, type Settings } from '../../console/src/settings-form.ts';
import { gitProviders, secretFields, settingsFieldNames } from '#shared/settings/model.ts';

/** The console's pure parts (what it makes of events, diffs, errors), its build and its headers. The browser tests are test/e2e/. */
let n = 0;
const ev = (kind: string, fields: Record<string, unknown> = {}): AnyEvent => ({
  kind,
  id: `e${++n}`,
  timestamp: '2026-01-01T00:00:00Z',
  source: 'agent',
  ...fields,
});

describe('the events view', () => {
  it('pairs each action with its observation: command output, file edits with both versions, MCP calls, rejections', () => {
    const bash = ev('ActionEvent', {
      tool_name: 'execute_bash',
      thought: [{ type: 'text', text: 'list it' }],
      action: { kind: 'ExecuteBashAction', command: 'ls' },
      security_risk: 'LOW',
    });
    const edit = ev('ActionEvent', {
      tool_name: 'str_replace_editor',
      action: { kind: 'StrReplaceEditorAction', command: 'str_replace', path: 'a.py', old_str: 'x', new_str: 'y' },
    });
    const mcp = ev('ActionEvent', {
      tool_name: 'fetch_page',
      action: { kind: 'MCPToolAction', data: { url: 'https://example.test' } },
    });
    const rejected = ev('ActionEvent', {
      tool_name: 'execute_bash',
      action: { kind: 'ExecuteBashAction', command: 'rm -rf /' },
      security_risk: 'HIGH',
    });
    const view = viewOf([
      ev('MessageEvent', {
        source: 'user',
        llm_message: {
          role: 'user',
          content: [
            { type: 'text', text: 'hi' },
            { type: 'image', image_urls: ['https://img.test/a.png'] },
          ],
        },
      }),
      bash,
      ev('ObservationEvent', {
        action_id: bash.id,
        observation: { kind: 'ExecuteBashObservation', output: 'a\nb', exit_code: 2, error: false },
      }),
      edit,
      ev('ObservationEvent', {
        action_id: edit.id,
        observation: { kind: 'StrReplaceEditorObservation', old_content: 'x\n', new_content: 'y\n', error: null },
      }),
      mcp,
      ev('ObservationEvent', {
        action_id: mcp.id,
        observation: { kind: 'MCPToolObservation', content: [{ type: 'text', text: 'page text' }], is_error: true },
      }),
      rejected,
      ev('UserRejectObservation', { source: 'user', action_id: rejected.id, rejection_reason: 'no' }),
    ]);
    expect(view.items.map((i) => i.kind)).toEqual(['message', 'action', 'action', 'action', 'action']);
    expect(view.items[0]).toMatchObject({ role: 'user', text: 'hi', images: ['https://img.test/a.png'] });
    expect(view.items[1]).toMatchObject({
      thought: 'list it',
      risk: 'LOW',
      action: { type: 'command', command: 'ls' },
      observation: { text: 'a\nb', exitCode: 2, isError: false },
    });
    expect(view.items[2]).toMatchObject({
      action: { type: 'edit', path: 'a.py', oldStr: 'x', newStr: 'y' },
      observation: { oldContent: 'x\n', newContent: 'y\n' },
    });
    expect(view.items[3]).toMatchObject({
      action: { type: 'mcp', tool: 'fetch_page', args: expect.stringContaining('https://example.test') },
      observation: { text: 'page text', isError: true },
    });
    expect(view.items[4]).toMatchObject({ risk: 'HIGH', observation: { rejected: 'no' } });
    expect(view.pending).toEqual([]);
  });

  it('tracks the execution status, tokens and cost, and the actions waiting for confirmation', () => {
    const waiting = ev('ActionEvent', {
      tool_name: 'execute_bash',
      action: { kind: 'ExecuteBashAction', command: 'deploy' },
      security_risk: 'HIGH',
    });
    const view = viewOf([
      ev('ConversationStateUpdateEvent', { source: 'environment', key: 'execution_status', value: 'running' }),
      ev('ConversationStateUpdateEvent', {
        source: 'environment',
        key: 'metrics',
        value: { accumulated_cost: 0.25, prompt_tokens: 100, completion_tokens: 20, max_budget_per_task: 1 },
      }),
      waiting,
      ev('ConversationStateUpdateEvent', {
        source: 'environment',
        key: 'execution_status',
        value: 'waiting_for_confirmation',
      }),
    ]);
    expect(view.executionStatus).toBe('waiting_for_confirmation');
    expect(view.metrics).toEqual({ cost: 0.25, promptTokens: 100, completionTokens: 20, budget: 1 });
    expect(view.pending.map((p) => p.id)).toEqual([waiting.id]);
    // Metrics update the header, not the timeline.
    expect(view.items.filter((i) => i.kind === 'state').map((i) => (i as { text: string }).text)).toEqual([
      'Agent running',
      'Agent waiting_for_confirmation',
    ]);
  });

  it('shows errors, and survives events of unknown kinds or with fields of the wrong type', () => {
    const view = viewOf([
      ev('AgentErrorEvent', { error: 'LLM said 401' }),
      ev('ConversationErrorEvent', { code: 'AgentStuckInLoop', detail: 'repeated' }),
      ev('SomethingNew', { x: 1 }),
      ev('ActionEvent', { tool_name: 42, action: 'not an object', thought: { text: 1 } }),
      ev('ObservationEvent', { action_id: 'unknown', observation: null }),
      ev('MessageEvent', { llm_message: null }),
    ]);
    expect(view.items.slice(0, 3)).toMatchObject([
      { kind: 'error', title: 'Agent error', detail: 'LLM said 401' },
      { kind: 'error', title: 'AgentStuckInLoop', detail: 'repeated' },
      { kind: 'system', text: 'SomethingNew' },
    ]);
    expect(view.items[3]).toMatchObject({ kind: 'action', tool: '42', thought: '' });
    expect(view.items[5]).toMatchObject({ kind: 'message', role: 'agent', text: '' });
  });
});

describe('line diffs', () => {
  it('marks removed and added lines and folds long unchanged runs', () => {
    const before = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n');
    const after = before.replace('line 10', 'line ten');
    const diff = lineDiff(before, after, 2);
    expect(diff).toEqual([
      { op: '…', skipped: 8 },
      { op: ' ', text: 'line 8' },
      { op: ' ', text: 'line 9' },
      { op: '-', text: 'line 10' },
      { op: '+', text: 'line ten' },
      { op: ' ', text: 'line 11' },
      { op: ' ', text: 'line 12' },
      { op: '…', skipped: 7 },
    ]);
  });

  it('a new file is all additions; an unchanged one has no change', () => {
    expect(lineDiff('', 'a\nb\n')).toEqual([
      { op: '+', text: 'a' },
      { op: '+', text: 'b' },
    ]);
    expect(lineDiff('a\nb', 'a\nb').every((l) => l.op === '…')).toBe(true);
  });
});

describe('API errors in the console', () => {
  it('a 422 becomes one message per field, without the body/query prefix', () => {
    const failure = failureOf(422, {
      detail: [
        { loc: ['body', 'max_iterations'], msg: 'max_iterations must be at least 1' },
        { loc: ['body', 'mcp_config', 'sse_servers', 0, 'url'], msg: 'must be an http(s) URL' },
      ],
    });
    expect(failure.fields).toEqual({
      max_iterations: 'max_iterations must be at least 1',
      'mcp_config.sse_servers.0.url': 'must be an http(s) URL',
    });
    expect(failureOf(404, { detail: 'Not Found' }).message).toBe('Not Found');
    expect(failureOf(500, '<html>').message).toBe('Request failed (HTTP 500)');
  });
});

describe('the settings form', () => {
  /** Settings as GET /api/settings answers them, with a value of each kind. */
  const stored = (): Settings => ({
    llm_model: 'openai/gpt-4o',
    llm_api_key: null,
    llm_base_url: null,
    max_iterations: 50,
    max_budget_per_task: 1.5,
    confirmation_mode: true,
    security_analyzer: 'llm',
    language: 'en',
    enable_default_condenser: false,
    llm_api_key_set: true,
    search_api_key_set: false,
    sandbox_api_key_set: false,
    provider_tokens_set: { github: null, gitlab: 'gitlab.example.com' },
    secrets_store: { custom_secrets: { DB_PASSWORD: { description: 'the staging database' } } },
    mcp_config: {
      sse_servers: [{ url: 'https://mcp.example.com/sse', api_key: null }],
      shttp_servers: [],
      stdio_servers: [{ name: 'fetch', command: 'npx', args: ['-y', 'fetch-mcp'], env: { TOKEN: null } }],
    },
  });

  it("shows every settings field of the API, each once, and only those; the secrets and providers are the model's", () => {
    const shown = GROUPS.flatMap((g) => g.fields.map((f) => f.name));
    expect(new Set(shown).size).toBe(shown.length);
    // MCP servers and the secrets store have lists of their own on the page.
    expect([...shown, 'mcp_config', 'secrets_store'].sort()).toEqual([...settingsFieldNames()].sort());
    const secrets = GROUPS.flatMap((g) => g.fields.filter((f) => f.kind === 'secret').map((f) => f.name));
    expect(secrets.sort()).toEqual([...secretFields].sort());
    expect([...PROVIDERS]).toEqual([...gitProviders]);
  });

  it('with nothing stored: the flags that default on are on, every input empty, and the body sends no secret', () => {
    const draft = draftOf(null);
    expect(draft.values).toMatchObject({
      enable_default_condenser: true,
      enable_proactive_conversation_starters: true,
      enable_solvability_analysis: true,
      confirmation_mode: false,
      llm_model: '',
      max_iterations: '',
    });
    const body = bodyOf(draft, null);
    // Empty text is null (unset), but the model and base URL clear with "" (null would keep them).
    expect(body).toMatchObject({ llm_model: '', llm_base_url: '', language: null, max_iterations: null });
    expect(body.security_analyzer).toBeNull();
    for (const secret of secretFields) expect(body).not.toHaveProperty(secret);
    expect(body.mcp_config).toEqual({ sse_servers: [], shttp_servers: [], stdio_servers: [] });
    expect(body.secrets_store).toEqual({ custom_secrets: {}, provider_tokens: {} });
  });

  it('an untouched form saves what is stored: values as they are, every write-only value kept (not sent, or null)', () => {
    const s = stored();
    const draft = draftOf(s);
    expect(draft.values).toMatchObject({ max_iterations: '50', llm_base_url: '', confirmation_mode: true });
    expect(draft.custom).toEqual([
      { name: 'DB_PASSWORD', value: '', description: 'the staging database', stored: true, remove: false },
    ]);
    expect(draft.tokens.gitlab).toEqual({ token: '', host: 'gitlab.example.com', remove: false });
    expect(draft.stdio[0]).toEqual({
      name: 'fetch',
      command: 'npx',
      args: '-y\nfetch-mcp',
      env: [{ key: 'TOKEN', value: '', stored: true }],
    });
    const body = bodyOf(draft, s);
    expect(body).toMatchObject({
      llm_model: 'openai/gpt-4o',
      max_iterations: 50,
      max_budget_per_task: 1.5,
      confirmation_mode: true,
      security_analyzer: 'llm',
      enable_default_condenser: false,
    });
    expect(body).not.toHaveProperty('llm_api_key');
    expect(body.mcp_config).toEqual({
      sse_servers: [{ url: 'https://mcp.example.com/sse', api_key: null }],
      shttp_servers: [],
      stdio_servers: [{ name: 'fetch', command: 'npx', args: ['-y', 'fetch-mcp'], env: { TOKEN: null } }],
    });
    expect(body.secrets_store).toEqual({
      custom_secrets: { DB_PASSWORD: { secret: null, description: 'the staging database' } },
      provider_tokens: {},
    });
  });

  it('edits: a typed secret is sent, a removed one is "", a removed custom secret or token is null, a new host alone is sent', () => {
    const s = stored();
    const draft = draftOf(s);
    draft.secrets.llm_api_key.value = 'sk-new';
    draft.secrets.search_api_key.clear = true;
    draft.values.max_iterations = '';
    draft.values.condenser_max_size = '30';
    draft.values.security_analyzer = '';
    draft.custom[0]!.remove = true;
    draft.custom.push({ name: 'API_TOKEN', value: 'tok', description: '', stored: false, remove: false });
    draft.custom.push({ name: '', value: 'no name', description: '', stored: false, remove: false });
    draft.tokens.github.remove = true;
    draft.tokens.gitlab.host = 'git.example.org';
    draft.tokens.bitbucket.token = 'bb-token';
    draft.stdio[0]!.env.push({ key: 'MODE', value: 'fast', stored: false });
    draft.sse.push({ url: '  https://other.example.com/sse ', api_key: 'k' });
    const body = bodyOf(draft, s);
    expect(body).toMatchObject({
      llm_api_key: 'sk-new',
      search_api_key: '',
      max_iterations: null,
      condenser_max_size: 30,
      security_analyzer: null,
    });
    expect(body).not.toHaveProperty('sandbox_api_key');
    expect(body.secrets_store).toEqual({
      custom_secrets: { DB_PASSWORD: null, API_TOKEN: { secret: 'tok', description: null } },
      provider_tokens: {
        github: null,
        gitlab: { token: null, host: 'git.example.org' },
        bitbucket: { token: 'bb-token', host: null },
      },
    });
    expect(body.mcp_config?.stdio_servers?.[0]?.env).toEqual({ TOKEN: null, MODE: 'fast' });
    expect(body.mcp_config?.sse_servers?.[1]).toEqual({ url: 'https://other.example.com/sse', api_key: 'k' });
  });
});

describe("the organization pages' rules", () => {
  const TOKEN = `acsi_${'A1-_'.repeat(11)}`;

  it('gives the controls of the roles table: owners everything, admins never an owner, members only leave', () => {
    expect([manages('owner'), manages('admin'), manages('member'), manages(null)]).toEqual([true, true, false, false]);
    expect(grantable('owner')).toEqual(['owner', 'admin', 'member']);
    expect(grantable('admin')).toEqual(['admin', 'member']);
    expect(grantable('member')).toEqual([]);
    const owner = { id: 'u-owner', role: 'owner' };
    const admin = { id: 'u-admin', role: 'admin' };
    const member = { id: 'u-member', role: 'member' };
    const rows = [
      { user_id: 'u-owner', role: 'owner' },
      { user_id: 'u-admin', role: 'admin' },
      { user_id: 'u-member', role: 'member' },
    ];
    expect(rows.map((r) => memberControls(owner, r))).toEqual([
      { roles: ['owner', 'admin', 'member'], action: 'leave' },
      { roles: ['owner', 'admin', 'member'], action: 'remove' },
      { roles: ['owner', 'admin', 'member'], action: 'remove' },
    ]);
    expect(rows.map((r) => memberControls(admin, r))).toEqual([
      { roles: [], action: null },
      { roles: ['admin', 'member'], action: 'leave' },
      { roles: ['admin', 'member'], action: 'remove' },
    ]);
    expect(rows.map((r) => memberControls(member, r))).toEqual([
      { roles: [], action: null },
      { roles: [], action: null },
      { roles: [], action: 'leave' },
    ]);
  });

  it("takes an invitation link's token out of the address, keeping the rest", () => {
    expect(invitationIn(`https://acs.example/?invitation=${TOKEN}`)).toEqual({ found: true, token: TOKEN, rest: '/' });
    expect(invitationIn(`https://acs.example/?a=1&invitation=${TOKEN}#/keys`)).toEqual({
      found: true,
      token: TOKEN,
      rest: '/?a=1#/keys',
    });
    // Not a token: removed all the same, never stored or sent.
    for (const bad of ['', 'acsi_short', 'acs_notaninvitation0000000000', `${TOKEN}/../x`, `${TOKEN}%20`])
      expect(invitationIn(`https://acs.example/?invitation=${encodeURIComponent(bad)}`)).toMatchObject({
        found: true,
        token: null,
        rest: '/',
      });
    expect(invitationIn('https://acs.example/auth/callback?code=c&state=s')).toEqual({
      found: false,
      token: null,
      rest: '/auth/callback?code=c&state=s',
    });
  });

  it("says why an acceptance failed, from the API's refusal", () => {
    expect(acceptFailure({ status: 404, message: 'Invitation not found, expired or already used' }, 'a@x')).toMatch(
      /expired .* or was already used/,
    );
    expect(acceptFailure({ status: 403, message: 'for another email' }, 'bo@example.com')).toContain(
      'signed in as bo@example.com',
    );
    expect(acceptFailure({ status: 403, message: 'for another email' }, null)).toContain('an API key with no email');
    expect(acceptFailure({ status: 409, message: 'You are already a member of this organization' }, 'a@x')).toBe(
      'You are already a member of this organization',
    );
  });

  it("names who did what in the audit log by the members' emails where known", () => {
    const members = [
      { user_id: 'u1', email: 'ann@example.com' },
      { user_id: 'u2', email: null },
    ];
    expect(actorName('u1', members)).toBe('ann@example.com');
    expect(actorName('u2', members)).toBe('u2');
    expect(actorName('operator:u1', members)).toBe('operator ann@example.com');
    expect(actorName('system', members)).toBe('system');
    expect(actionName('invitation_sent')).toBe('Invitation sent');
    expect(
      entryDetail(
        { actor: 'u1', action: 'role_changed', target: 'u1', fields: [], detail: 'member -> admin' },
        members,
      ),
    ).toBe('ann@example.com · member -> admin');
    expect(
      entryDetail(
        { actor: 'u1', action: 'settings_saved', target: null, fields: ['llm_model', 'agent'], detail: null },
        members,
      ),
    ).toBe('fields: llm_model, agent');
  });
});

describe('the console build', () => {
  it('is under 200 KB of gzipped JavaScript, and is not rebuilt while its sources are unchanged', () => {
    const manifest = buildConsole();
    const script = readFileSync(join(CONSOLE_BUILD_DIR, 'app.js'));
    expect(manifest.scriptGzipBytes).toBe(gzipSync(script, { level: 9 }).length);
    expect(manifest.scriptGzipBytes).toBeLessThan(200 * 1024);
    console.log(`console: ${manifest.scriptBytes} bytes of JS, ${manifest.scriptGzipBytes} gzipped`);
    const mtime = statSync(join(CONSOLE_BUILD_DIR, 'app.js')).mtimeMs;
    expect(buildConsole().version).toBe(manifest.version);
    expect(statSync(join(CONSOLE_BUILD_DIR, 'app.js')).mtimeMs).toBe(mtime);
  });

  it('is served as the page names it; nothing else of the build directory is', () => {
    const { version } = buildConsole();
    const page = consolePage()!;
    expect(page).toContain(`assets/app.js?v=${version}`);
    expect(page).not.toMatch(/<script>|<style>|\sstyle=|\son[a-z]+=/i);
    // Whether the request carried a session cookie: the page asks for the session only then.
    expect(page).toContain('<html lang="en">');
    expect(consolePage(true)).toContain('<html lang="en" data-session>');
    expect(consoleAsset('app.js')?.contentType).toMatch(/^text\/javascript/);
    for (const name of ['manifest.json', '../manifest.json', 'app.js/', '__proto__', 'constructor'])
      expect(consoleAsset(name), name).toBeUndefined();
  });

  it('has a policy without inline script, eval or other origins; the stream on this host only', () => {
    const headers = consoleHeaders('https://acs.example.com');
    const csp = Object.fromEntries(
      headers['content-security-policy']!.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]),
    );
    expect(csp).toMatchObject({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'connect-src': "'self' ws://acs.example.com wss://acs.example.com",
      'frame-ancestors': "'none'",
      'base-uri': "'none'",
      'object-src': "'none'",
    });
    expect(headers['content-security-policy']).not.toMatch(/unsafe|\*|https?:/);
    expect(headers).toMatchObject({
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
    });
  });

  it('takes nothing but a host name and port from the Host header into the policy', () => {
    for (const base of [
      'http://evil.example; script-src-elem https://evil.example',
      'http://a b',
      'not a url',
      "http://x'y",
      'http://evil.example,script-src',
    ]) {
      const csp = consoleHeaders(base)['content-security-policy']!;
      expect(csp, base).toContain("connect-src 'self';");
      expect(csp, base).not.toContain('evil');
    }
    expect(consoleHeaders('http://[::1]:3000')['content-security-policy']).toContain(
      "connect-src 'self' ws://[::1]:3000 wss://[::1]:3000;",
    );
  });

  it("adds the OpenID issuer's origins (where the page redeems its code), and nothing else from them", () => {
    const saved = { ...process.env };
    try {
      process.env.OIDC_ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc';
      process.env.OIDC_CONNECT_ORIGINS =
        "https://acs.auth.eu-west-1.amazoncognito.com, javascript:alert(1), https://x'y";
      const csp = consoleHeaders('https://acs.example.com')['content-security-policy']!;
      expect(csp).toContain(
        "connect-src 'self' ws://acs.example.com wss://acs.example.com https://cognito-idp.eu-west-1.amazonaws.com https://acs.auth.eu-west-1.amazoncognito.com;",
      );
      expect(csp).not.toMatch(/javascript|x'y/);
      // The page served at /auth/callback finds its assets from there.
      expect(consolePage(false, '../')).toContain('src="../assets/app.js?v=');
    } finally {
      process.env = saved;
    }
  });
});
