import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEndpointFile, useLocalTables } from '#infra/local/dynamo.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { CHROMIUM, launchBrowser, type Browser } from '#test/helpers/browser.ts';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { startServerProcess, type ServerProcess } from '#test/helpers/server-process.ts';

/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against `npm start`
 * as a child process, with the scripted LLM: every step a person takes, and an agent whose output
 * is hostile. Screenshots go to test-artifacts/console/.
 */
// What the functions given to page.evaluate see (they run in the page); declared here, in this module
// only, so the rest of the program keeps Node's types.
declare const window: any;
declare const document: any;
declare const localStorage: { length: number };
declare const sessionStorage: { length: number; getItem(key: string): string | null };
declare const history: { length: number };

let llm: ScriptedLlm;
let server: ServerProcess;
let browser: Browser;
let page: Page;
let dataDir: string;
/** The conversation of the "live" test, reused to pause and resume its sandbox. */
let firstConversation = '';
/** The invitation links the owner made (organization tests): for bo@example.com, and for someone else. */
const links = { bo: '', other: '' };

const api = async (method: string, path: string, body?: unknown, key = server.key) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'x-session-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
};

/** Form controls on the page with no accessible name (a label, or aria-label). */
const unlabelledControls = () =>
  page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea, button')]
      .filter(
        (el: any) =>
          el.type !== 'hidden' &&
          !(el.labels?.length || el.getAttribute('aria-label') || (el.tagName === 'BUTTON' && el.textContent.trim())),
      )
      .map((el: any) => el.outerHTML.slice(0, 120)),
  );

/** Starts a conversation from the console's form and waits for its page. */
async function startFromConsole(message: string, title: string): Promise<string> {
  await page.getByRole('link', { name: 'Conversations' }).click();
  await page.getByRole('link', { name: 'New conversation' }).click();
  await page.getByLabel('First message').fill(message);
  await page.locator('#new-title').fill(title);
  await page.getByRole('button', { name: 'Start conversation' }).click();
  await page.getByRole('region', { name: 'Start progress' }).waitFor();
  await page.waitForURL(/#\/conversations\/[0-9a-f]{32}$/, { timeout: 90_000 });
  return /#\/conversations\/([0-9a-f]{32})$/.exec(page.url())![1]!;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does)`);
  llm = await startScriptedLlm();
  dataDir = mkdtempSync(join(tmpdir(), 'acs-console-e2e-'));
  // The development OpenID provider on (no issuer of the environment's) and sign-up open: the invited person signs in there.
  server = await startServerProcess(dataDir, ['--memory'], {
    OIDC_ISSUER: '',
    OIDC_AUDIENCE: '',
    OIDC_CLIENT_ID: '',
    SIGNUP_MODE: '',
  });
  browser = await launchBrowser('console');
  page = browser.page;
  page.on('dialog', (d) => void d.accept());
  // Records every Content-Security-Policy violation the page reports (a payload the policy stopped).
  await browser.context.addInitScript(() => {
    (window as any).__violations = [];
    document.addEventListener('securitypolicyviolation', (e: any) =>
      (window as any).__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample }),
    );
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.interrupt();
  await llm?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('the web console in Chromium', { timeout: 150_000 }, () => {
  it('is served at / with a strict Content-Security-Policy; /docs and the API are untouched', async () => {
    const res = await fetch(`${server.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    const host = new URL(server.url).host;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).toContain(`connect-src 'self' ws://${host} wss://${host}`);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("require-trusted-types-for 'script'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect(html).not.toMatch(/https?:\/\//); // nothing from another origin
    const script = await fetch(`${server.url}/${/src="([^"]+)"/.exec(html)![1]}`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(script.headers.get('cache-control')).toContain('immutable');
    expect(script.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await fetch(`${server.url}/assets/manifest.json`)).status).toBe(404);
    expect((await fetch(`${server.url}/assets/..%2Fpackage.json`)).status).toBe(404);
    expect((await fetch(`${server.url}/docs`)).status).toBe(200);
    expect((await fetch(`${server.url}/api/v1/users/me`)).status).toBe(401);
  });

  it('signs in with a pasted API key, which the page does not keep', async () => {
    // A first visit (no session cookie): the sign-in form at once, no request that fails, nothing logged.
    const apiCalls: string[] = [];
    const logged: string[] = [];
    const onRequest = (r: { url(): string }) => void (r.url().includes('/api/') && apiCalls.push(r.url()));
    const onConsole = (m: { type(): string; text(): string }) => void (m.type() === 'error' && logged.push(m.text()));
    page.on('request', onRequest);
    page.on('console', onConsole);
    const response = await page.goto(server.url);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByLabel('API key').waitFor();
    page.off('request', onRequest);
    page.off('console', onConsole);
    expect(apiCalls).toEqual([]);
    expect(logged).toEqual([]);
    expect(await page.content()).not.toContain('session ended');
    await page.getByLabel('API key').fill(server.key);
    await browser.shot('01-sign-in');
    await page.getByRole('button', { name: 'Sign in with key' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    expect(await page.content()).not.toContain(server.key);
    const storage = await page.evaluate(() => ({
      local: localStorage.length,
      session: sessionStorage.length,
      cookie: document.cookie,
    }));
    expect(storage).toEqual({ local: 0, session: 0, cookie: '' }); // the session cookie is HttpOnly
    const cookies = await browser.context.cookies();
    expect(cookies.length).toBe(1);
    expect(cookies[0]!.httpOnly).toBe(true);
    expect(cookies[0]!.value).not.toContain(server.key);
    await page.getByRole('heading', { name: 'Conversations' }).waitFor();
  });

  it('saves settings, shows a 422 next to its field, and adds and removes an MCP server', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Model', { exact: true }).fill('scripted-e2e');
    await page.locator('#setting-llm_api_key').fill('sk-e2e-secret');
    await page.getByLabel('Base URL').fill(llm.baseUrl);
    await page.getByLabel('Maximum iterations').fill('0');
    await page.getByRole('button', { name: 'Add SSE server' }).click();
    await page.locator('#sse-0-url').fill('https://mcp.example.test/sse');
    await page.getByRole('button', { name: 'Save settings' }).click();
    const error = page.locator('#setting-max_iterations-error');
    await error.waitFor();
    expect(await error.textContent()).toContain('at least 1');
    expect(await page.getByLabel('Maximum iterations').getAttribute('aria-invalid')).toBe('true');
    await browser.shot('02-settings-422');
    expect((await api('GET', '/api/settings')).status).toBe(404); // nothing stored

    await page.getByLabel('Maximum iterations').fill('40');
    await page.getByRole('button', { name: 'Add secret' }).click();
    await page.locator('#secret-0-name').fill('E2E_TOKEN');
    await page.locator('#secret-0-value').fill('e2e-custom-secret');
    // A git server that refuses connections (loopback, port 9): the start that clones from it fails.
    await page.locator('#token-enterprise_sso').fill('sso-e2e-token');
    await page.locator('#token-enterprise_sso-host').fill('http://127.0.0.1:9');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    let stored = (await api('GET', '/api/settings')).body;
    expect(stored).toMatchObject({
      llm_model: 'scripted-e2e',
      llm_base_url: llm.baseUrl,
      llm_api_key: null,
      llm_api_key_set: true,
      max_iterations: 40,
    });
    expect(stored.secrets_store.custom_secrets).toEqual({ E2E_TOKEN: { secret: null, description: null } });
    expect(stored.mcp_config.sse_servers).toEqual([{ url: 'https://mcp.example.test/sse', api_key: null }]);
    expect(stored.provider_tokens_set).toEqual({ enterprise_sso: 'http://127.0.0.1:9' });
    await expect.poll(() => page.locator('label[for="token-enterprise_sso"] .badge').textContent()).toBe('set');
    // Secrets come back write-only: a "set" badge, an empty input.
    await expect.poll(() => page.locator('label[for="setting-llm_api_key"] .badge').textContent()).toBe('set');
    await expect.poll(() => page.locator('#setting-llm_api_key').inputValue()).toBe('');
    expect(await page.content()).not.toContain('e2e-custom-secret');
    expect(await page.content()).not.toContain('sso-e2e-token');
    await browser.shot('03-settings-saved');
    expect(await unlabelledControls()).toEqual([]);

    await page.getByRole('button', { name: 'Remove SSE server 1' }).click();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(async () => (await api('GET', '/api/settings')).body.mcp_config.sse_servers).toEqual([]);
    stored = (await api('GET', '/api/settings')).body;
    expect(stored.llm_api_key_set).toBe(true); // an empty secret input keeps the stored key
    expect(stored.secrets_store.custom_secrets).toHaveProperty('E2E_TOKEN');
  });

  it('starts a conversation, shows the start steps, and its events as they arrive', async () => {
    llm.enqueue(
      reply.tool('think', { thought: 'Planning the notes file.' }),
      reply.bash('echo hello-from-the-agent'),
      reply.tool('str_replace_editor', { command: 'create', path: 'notes.txt', file_text: 'first line\nkept line\n' }),
      reply.tool('str_replace_editor', {
        command: 'str_replace',
        path: 'notes.txt',
        old_str: 'first line',
        new_str: 'second line',
      }),
      reply.finish('All **done**.'),
    );
    firstConversation = await startFromConsole('Write some notes', 'E2E notes');
    await page.locator('.feed', { hasText: 'live' }).waitFor(); // over the WebSocket stream
    await page.locator('pre.output', { hasText: 'hello-from-the-agent' }).waitFor({ timeout: 60_000 });
    await page.locator('.diff .add', { hasText: 'second line' }).waitFor();
    await page.locator('.diff .del', { hasText: 'first line' }).first().waitFor();
    await page.locator('.markdown strong', { hasText: 'done' }).waitFor();
    await page.locator('.facts .badge', { hasText: 'finished' }).waitFor();
    expect(await page.locator('.facts dd', { hasText: '/' }).first().textContent()).toMatch(/\d+ \/ \d+/);
    await browser.shot('04-conversation');

    // Live: a new message and the agent's answer appear on the same page, with no reload.
    await page.evaluate(() => ((window as any).__samePage = true));
    llm.enqueue(reply.finish('The second answer.'));
    await page.getByLabel('Message to the agent').fill('And now?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.event.message.user', { hasText: 'And now?' }).waitFor({ timeout: 30_000 });
    await page.locator('.markdown', { hasText: 'The second answer.' }).waitFor({ timeout: 60_000 });
    expect(await page.evaluate(() => (window as any).__samePage)).toBe(true);
    expect(await page.getByLabel('Message to the agent').inputValue()).toBe('');
  });

  it("shows a start that fails, with the start task's error detail", async () => {
    await page.getByRole('link', { name: 'Conversations' }).click();
    await page.getByRole('link', { name: 'New conversation' }).click();
    await page.getByLabel('First message').fill('Clone and look');
    await page.getByLabel('Repository', { exact: true }).first().fill('acme/widgets');
    await page.getByLabel('Provider').selectOption('enterprise_sso');
    await page.getByLabel('Branch').fill('main');
    await page.getByRole('button', { name: 'Start conversation' }).click();
    const failure = page.getByRole('region', { name: 'Start progress' }).getByRole('alert');
    await failure.waitFor({ timeout: 90_000 });
    expect(await failure.textContent()).toMatch(/The start failed\..+/);
    expect(await page.locator('.progress li.done').count()).toBeGreaterThanOrEqual(2);
    expect(await page.locator('.progress li.failed').count()).toBe(1);
    expect(await page.content()).not.toContain('sso-e2e-token');
    await browser.shot('04b-start-failed');
  });

  it('falls back to polling where the stream cannot be opened', async () => {
    const other = await browser.context.newPage();
    try {
      await other.addInitScript(() => delete (window as any).WebSocket);
      await other.goto(`${server.url}/#/conversations/${firstConversation}`);
      await other.locator('pre.output', { hasText: 'hello-from-the-agent' }).waitFor();
      await other.locator('.feed', { hasText: 'polling' }).waitFor();
      expect(await other.locator('.event.message.user', { hasText: 'And now?' }).count()).toBe(1); // each event once
    } finally {
      await other.close();
    }
  });

  it('finds conversations by title', async () => {
    await page.getByRole('link', { name: 'Conversations' }).click();
    await page.getByRole('link', { name: 'E2E notes' }).waitFor();
    await page.getByLabel('Title contains').fill('no such title');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No conversations match.').waitFor();
    await page.getByLabel('Title contains').fill('E2E');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'E2E notes' }).waitFor();
  });

  it('pauses and runs the agent, and chimes when it finishes if sound notifications are on', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Sound when the agent finishes or waits').check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    llm.enqueue(reply.bash('sleep 4; echo slept'), reply.finish('Resumed and done.'));
    await page.getByRole('link', { name: 'Conversations' }).click();
    await page.getByRole('link', { name: 'New conversation' }).click();
    expect(await unlabelledControls()).toEqual([]);
    await startFromConsole('Sleep a little', 'E2E pause');
    await page.locator('pre.command', { hasText: 'sleep 4' }).waitFor({ timeout: 60_000 });
    const chimesBefore = Number((await page.evaluate(() => document.documentElement.dataset.chimes)) ?? 0);
    await page.getByRole('button', { name: 'Pause agent' }).click();
    await page.locator('.event.state', { hasText: 'Paused by the user' }).waitFor({ timeout: 30_000 });
    await page.locator('.facts .badge', { hasText: 'paused' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('.markdown', { hasText: 'Resumed and done.' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Run agent' }).click();
    await page.locator('.markdown', { hasText: 'Resumed and done.' }).waitFor({ timeout: 60_000 });
    await page.locator('.facts .badge', { hasText: 'finished' }).waitFor();
    await expect
      .poll(async () => Number((await page.evaluate(() => document.documentElement.dataset.chimes)) ?? 0))
      .toBeGreaterThan(chimesBefore);
    await api('POST', '/api/settings', { enable_sound_notifications: false });
  });

  it('holds a risky action for confirmation with its risk, runs the accepted one and not the rejected one', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Ask before running actions (confirmation mode)').check();
    await page.getByLabel('Security analyzer').selectOption('llm');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    llm.enqueue(
      reply.tool('execute_bash', { command: 'echo accepted-run', security_risk: 'HIGH' }),
      reply.tool('execute_bash', { command: 'echo rejected-run', security_risk: 'HIGH' }),
      reply.finish('Finished after the rejection.'),
    );
    await startFromConsole('Run two risky commands', 'E2E confirmation');
    const panel = page.getByRole('region', { name: 'Waiting for your confirmation' });
    await panel.waitFor({ timeout: 60_000 });
    expect(await panel.textContent()).toContain('echo accepted-run');
    expect(await panel.locator('.badge').first().textContent()).toBe('risk HIGH');
    await browser.shot('05-confirmation');
    await panel.getByRole('button', { name: 'Accept' }).click();
    await page.locator('pre.output', { hasText: 'accepted-run' }).waitFor({ timeout: 60_000 });
    await panel.getByText('echo rejected-run').waitFor({ timeout: 60_000 });
    await panel.getByLabel('Reason (when rejecting)').fill('not this one');
    await panel.getByRole('button', { name: 'Reject' }).click();
    await page.locator('.badge', { hasText: 'rejected: not this one' }).waitFor({ timeout: 30_000 });
    await page.locator('.markdown', { hasText: 'Finished after the rejection.' }).waitFor({ timeout: 60_000 });
    expect(await page.locator('pre.output', { hasText: 'rejected-run' }).count()).toBe(0);
    await api('POST', '/api/settings', { confirmation_mode: false, security_analyzer: null });
  });

  it("pauses and resumes a conversation's sandbox, and lists it", async () => {
    await page.goto(`${server.url}/#/conversations/${firstConversation}`);
    await page.getByRole('heading', { name: 'E2E notes' }).waitFor();
    await page.getByRole('button', { name: 'Pause sandbox' }).click();
    await page.locator('.facts .badge', { hasText: 'PAUSED' }).waitFor({ timeout: 60_000 });
    await browser.shot('06-sandbox-paused');
    await page.getByRole('button', { name: 'Resume sandbox' }).click();
    await page.locator('.facts .badge', { hasText: 'RUNNING' }).waitFor({ timeout: 90_000 });
    await page.getByRole('link', { name: 'Sandboxes' }).click();
    await page.locator('table.list').waitFor();
    expect(await page.locator('table.list tbody tr').count()).toBeGreaterThanOrEqual(2);
    // Delete another sandbox from the list (the confirmation's): its row goes, the first one stays.
    const keep = (await api('GET', `/api/v1/app-conversations?ids=${firstConversation}`)).body[0].sandbox_id as string;
    const all = (await api('GET', '/api/v1/sandboxes/search')).body.items.map((s: { id: string }) => s.id) as string[];
    const victim = all.find((id) => id !== keep)!;
    await page.getByRole('button', { name: `Delete sandbox ${victim}` }).click();
    await expect
      .poll(() => page.getByRole('button', { name: `Delete sandbox ${victim}` }).count(), { timeout: 30_000 })
      .toBe(0);
    expect((await api('GET', `/api/v1/sandboxes?id=${victim}`)).body).toEqual([null]);
    await page.getByRole('button', { name: `Delete sandbox ${keep}` }).waitFor();
    await page.getByRole('link', { name: 'Sandbox specs' }).click();
    // The sandboxes table (whose rows name the same spec) is gone once the specs page's heading shows.
    await page.getByRole('heading', { name: 'Sandbox specs' }).waitFor();
    await page.getByRole('cell', { name: 'local-default', exact: true }).waitFor();
    await browser.shot('07-specs');
  });

  it('creates an API key shown once, and revokes it', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-name-error').waitFor(); // an empty name: 422 at the field
    await page.getByLabel('Name of a new key').fill('e2e key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByLabel('The new API key');
    await shown.waitFor();
    const key = await shown.inputValue();
    expect(key).toMatch(/^acs_/);
    expect((await api('GET', '/api/v1/users/me', undefined, key)).status).toBe(200);
    await browser.shot('08-key-created');
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.content()).not.toContain(key);
    await page.getByRole('cell', { name: 'e2e key', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Revoke key e2e key' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'e2e key', exact: true }).count()).toBe(0);
    expect((await api('GET', '/api/v1/users/me', undefined, key)).status).toBe(401);
  });

  it('shows hostile agent, repository and LLM output as text: no payload runs', async () => {
    const p = (n: number) => `window.__pwned=${n}`;
    llm.enqueue(
      reply.tool('think', { thought: `<img src=x onerror="${p(1)}">` }),
      reply.bash(`echo '<img src=x onerror=${p(2)}>' '<script>${p(3)}</script>'`),
      reply.tool('str_replace_editor', {
        command: 'create',
        path: 'evil.html',
        file_text: `<script>${p(4)}</script>\n<img src=x onerror="${p(5)}">\n<svg onload="${p(6)}"></svg>\n`,
      }),
      reply.text(
        [
          '# Report',
          `<img src=x onerror="${p(7)}"><script>${p(8)}</script>`,
          `[click me](javascript:${p(9)}) <a href="javascript:${p(10)}">and me</a>`,
          `<iframe src="javascript:${p(11)}"></iframe><div onmouseover="${p(12)}">hover here</div>`,
          `<form action="https://evil.example/"><button>send</button></form>`,
          '![tracker](https://evil.example/pixel.png)',
        ].join('\n\n'),
      ),
    );
    await startFromConsole(`<img src=x onerror="${p(13)}">`, `<script>${p(14)}</script>`);
    await page.locator('.markdown h1', { hasText: 'Report' }).waitFor({ timeout: 60_000 });
    await page.locator('pre.output', { hasText: '<script>window.__pwned=3</script>' }).waitFor();
    await page.locator('.diff .add', { hasText: '<svg onload="window.__pwned=6"></svg>' }).waitFor();
    // The heading shows the conversation's record, which loads apart from the events (the stream).
    await page.locator('h1', { hasText: '<script>window.__pwned=14</script>' }).waitFor();
    // Shown as text where they came as text:
    expect(await page.locator('.thought', { hasText: '<img src=x onerror="window.__pwned=1">' }).count()).toBe(1);
    expect(
      await page.locator('.event.message.user', { hasText: '<img src=x onerror="window.__pwned=13">' }).count(),
    ).toBe(1);
    expect(await page.locator('h1', { hasText: '<script>window.__pwned=14</script>' }).count()).toBe(1);
    await page.getByText('hover here').hover();
    await page.getByText('click me').click();
    await page.getByText('and me').click();
    await page.waitForTimeout(500);
    await browser.shot('09-hostile');
    const seen = await page.evaluate(() => ({
      pwned: (window as any).__pwned,
      handlers: document.querySelectorAll('[onerror], [onload], [onmouseover], [onclick]').length,
      scripts: document.querySelectorAll('#app script').length,
      frames: document.querySelectorAll('iframe, object, embed, .markdown form, .markdown svg').length,
      jsLinks: [...document.querySelectorAll('a')].filter((a) => /^\s*javascript:/i.test(a.getAttribute('href') ?? ''))
        .length,
      pages: history.length,
      violations: (window as any).__violations as { directive: string; blocked: string }[],
    }));
    expect(seen).toMatchObject({ pwned: undefined, handlers: 0, scripts: 0, frames: 0, jsLinks: 0 });
    // No script element was ever attempted. (Inline handlers the sanitizer parses in its inert document
    // are reported as script-src-attr by Chromium, and blocked: the policy applies there too.)
    expect(
      seen.violations.filter((v) => v.directive.startsWith('script-src') && v.directive !== 'script-src-attr'),
    ).toEqual([]);
    // The one thing the sanitizer lets through on purpose (an image) the CSP keeps from calling out.
    expect(seen.violations.filter((v) => v.directive === 'img-src').map((v) => v.blocked)).toEqual([
      'https://evil.example/pixel.png',
    ]);

    // And were the sanitizer ever bypassed: Trusted Types refuse any string in an HTML sink or an
    // inline handler set from script (only DOMPurify's policy makes HTML here), and the CSP refuses
    // inline handlers and scripts the parser meets.
    const refused = await page.evaluate(() => {
      const attempts: Record<string, () => void> = {
        insertAdjacentHTML: () =>
          document.body.insertAdjacentHTML('beforeend', '<img src=x onerror="window.__pwned=100">'),
        innerHTML: () => (document.createElement('div').innerHTML = '<img src=x onerror="window.__pwned=101">'),
        handlerAttribute: () => document.createElement('img').setAttribute('onerror', 'window.__pwned=102'),
        scriptText: () => (document.createElement('script').textContent = 'window.__pwned=103'),
      };
      return Object.entries(attempts)
        .filter(([, attempt]) => {
          try {
            attempt();
            return false;
          } catch (err) {
            return err instanceof TypeError;
          }
        })
        .map(([name]) => name);
    });
    expect(refused).toEqual(['insertAdjacentHTML', 'innerHTML', 'handlerAttribute', 'scriptText']);
    expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();
  });

  it("shows the usage page: the ledger's figures per day and per member, the plan's limits as bars, the notifications", async () => {
    // Put into the running server's ledger through its own store (the dynalite it serves, on its socket).
    const me = (await api('GET', '/api/v1/users/me')).body;
    const saved = { ...process.env };
    const db = readEndpointFile(dataDir)!;
    useLocalTables(db.endpoint, 'acs', db.eventsEndpoint);
    try {
      const store = new DynamoUsageStore();
      const price = {
        region: 'us-east-1',
        spot: false,
        vcpu_hour_usd: '0.04048',
        gb_hour_usd: '0.004445',
        markup_percent: '0',
      };
      expect(
        await store.recordCompute({
          sandboxId: 'e2e-usage',
          generation: 1,
          orgId: me.org_id,
          userId: me.id,
          specId: 'default',
          day: '2026-01-15',
          from: '2026-01-15T10:00:00.000Z',
          to: '2026-01-15T10:20:34.000Z',
          seconds: 1234,
          factorSeconds: 1234,
          vcpuSeconds: 1234,
          gbSeconds: 2468,
          computeMicroUsd: 1_234_567,
          cpuUnits: 1024,
          memoryMiB: 2048,
          resourceFactor: 1,
          price,
          recordedAt: '2026-01-15T10:20:34.000Z',
        }),
      ).toBeTruthy();
      // An operator's correction for the organization on that day (a record of its own): in the total, shown apart.
      expect(
        await store.recordCorrection({
          id: 'e2e-correction',
          orgId: me.org_id,
          userId: null,
          day: '2026-01-15',
          microUsd: -234_567,
          reason: 'outage credit',
          operator: 'operator:e2e',
          at: '2026-01-20T00:00:00.000Z',
        }),
      ).toBe(true);
      expect(
        await store.claimNotice({
          orgId: me.org_id,
          period: new Date().toISOString().slice(0, 7),
          limit: 'monthly_spend_usd',
          threshold: 80,
          used: 4.2,
          limitValue: 5,
          unit: 'USD',
          at: new Date().toISOString(),
        }),
      ).toBe(true);
    } finally {
      process.env = saved;
    }
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    // This month's limits as bars (the roomy plan), the notification.
    await page.locator('[data-limit="hours"]').waitFor();
    await page.locator('[data-limit="spend"]').waitFor();
    await page.getByRole('table', { name: 'Usage notifications, newest first' }).getByText('80%').waitFor();
    // January 2026, where the test's records are: their figures, to the micro-dollar, in the total (the correction
    // taken off), the chart and per member (the organization's correction names no member).
    await page.evaluate(() => (window.location.hash = '#/usage/2026-01-01/2026-01-31'));
    await page.getByTestId('usage-compute').filter({ hasText: '$1.234567' }).waitFor();
    expect(await page.getByTestId('usage-total').textContent()).toBe('$1.00');
    expect(await page.getByTestId('usage-corrections').textContent()).toBe('-$0.234567');
    expect(await page.locator('figure.chart svg title').allTextContents()).toContain(
      '2026-01-15: compute $1.234567, LLM $0.00, storage $0.00',
    );
    const row = page.getByRole('table', { name: 'Usage per member' }).getByRole('row').nth(1);
    expect(await row.textContent()).toContain('$1.234567');
    expect(await unlabelledControls()).toEqual([]);
    await browser.shot('09-usage');
  });

  it('signs out: the cookie stops working and the sign-in form is back, which works from the keyboard', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    const status = await page.evaluate(async () => (await fetch('/api/v1/users/me')).status);
    expect(status).toBe(401);
    // With the keyboard alone: Tab past "Sign in with OpenID" to the key, type it, Enter.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Sign in with OpenID');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('api-key');
    await page.keyboard.type(server.key);
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
  });
  it('an owner renames the organization and invites by email: the link is shown once; the last owner cannot leave', async () => {
    await page.getByRole('link', { name: 'Organization' }).click();
    await page.getByRole('heading', { name: 'Organization' }).waitFor();
    expect(await page.getByTestId('org-role').textContent()).toBe('owner');
    expect(await page.getByRole('link', { name: 'Audit log' }).count()).toBe(1);
    await page.getByLabel('Rename the organization').fill('E2E Team');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByTestId('org-name').filter({ hasText: 'E2E Team' }).waitFor();
    // The only owner leaving: the API refuses, and the page says why.
    await page.getByRole('button', { name: 'Leave organization' }).click();
    await page.getByRole('alert').filter({ hasText: 'The last owner cannot leave' }).waitFor();
    expect((await api('GET', '/api/v1/users/me')).body.role).toBe('owner');

    const invite = async (email: string) => {
      await page.getByLabel('Invite by email').fill(email);
      await page.getByRole('button', { name: 'Send invitation' }).click();
      const shown = page.getByLabel('The invitation link');
      await shown.waitFor();
      const link = await shown.inputValue();
      expect(link).toMatch(new RegExp(`^${server.url}/\\?invitation=acsi_[A-Za-z0-9_-]{43}$`));
      await page.getByRole('button', { name: /^Copy/ }).waitFor();
      return link;
    };
    links.other = await invite('carl@example.com');
    await page.getByRole('button', { name: 'Done' }).click();
    links.bo = await invite('Bo@Example.com');
    await browser.shot('10-invitation-link');
    await page.getByRole('button', { name: 'Done' }).click();
    // Shown once: gone from the page, and never in the list (which the API answers without tokens).
    const token = new URL(links.bo).searchParams.get('invitation')!;
    expect(await page.content()).not.toContain(token);
    const open = page.getByRole('table', { name: 'Open invitations' });
    await open.getByRole('cell', { name: 'bo@example.com' }).waitFor();
    await open.getByRole('cell', { name: 'carl@example.com' }).waitFor();
    expect(await unlabelledControls()).toEqual([]);
  });

  it('the invited person opens the link signed out, signs in with the development provider and joins, as a member', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    await page.goto(links.bo);
    // The token leaves the address bar at once, and waits in this tab for the sign-in.
    await page.getByText('You were invited to join an organization').waitFor();
    expect(new URL(page.url()).search).toBe('');
    const token = new URL(links.bo).searchParams.get('invitation')!;
    expect(await page.evaluate(() => sessionStorage.getItem('acs-invitation-pending'))).toBe(token);
    await page.getByRole('button', { name: 'Sign in with OpenID' }).click();
    await page.waitForURL(/\/oidc\/interaction\//);
    await page.getByLabel('Email').fill('bo@example.com');
    await page
      .getByLabel('Development password')
      .fill(readFileSync(join(dataDir, 'dev-signin-password'), 'utf8').trim());
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The invitation is read before the question: it names the organization and the role.
    await page.getByRole('heading', { name: 'Join E2E Team as member?' }).waitFor();
    expect(await page.locator('header .user').textContent()).toBe('bo@example.com');
    // The link alone moves nobody: bo is still in a personal organization of their own until "Join".
    const ownerOrg = (await api('GET', '/api/v1/users/me')).body.org_id;
    const before: any = await page.evaluate(async () => (await fetch('/api/v1/users/me')).json());
    expect(before).toMatchObject({ email: 'bo@example.com', role: 'owner' });
    expect(before.org_id).not.toBe(ownerOrg);
    await browser.shot('11-join');
    await page.getByRole('button', { name: 'Join', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'You joined E2E Team as member.' }).waitFor();
    await page.getByTestId('org-name').filter({ hasText: 'E2E Team' }).waitFor();
    expect(await page.getByTestId('org-role').textContent()).toBe('member');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(page.url()).not.toContain('invitation');
    // A member sees the members without the controls: no invite form, no role to change, no audit log.
    await page
      .getByRole('table', { name: 'Members of the organization' })
      .getByRole('cell', { name: /bo@example\.com/ })
      .waitFor();
    expect(await page.getByLabel('Invite by email').count()).toBe(0);
    expect(await page.getByRole('combobox').count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Remove / }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    expect(await page.getByLabel('Rename the organization').count()).toBe(0);
    await browser.shot('12-member-view');
    const auditCalls: string[] = [];
    const onRequest = (r: { url(): string }) => void (r.url().includes('/audit-log') && auditCalls.push(r.url()));
    page.on('request', onRequest);
    await page.evaluate(() => (window.location.hash = '#/audit'));
    await page.getByText("Only the organization's owners and admins see its audit log.").waitFor();
    page.off('request', onRequest);
    expect(auditCalls).toEqual([]);
    expect(await page.evaluate(async () => (await fetch('/api/v1/audit-log')).status)).toBe(403);

    // Someone else's link: refused for this email at once, naming no organization and offering no "Join";
    // a used link: refused at once too. "Close" forgets the token in this tab.
    await page.goto(links.other);
    await page.getByRole('alert').filter({ hasText: 'for another email address' }).waitFor();
    expect(new URL(page.url()).search).toBe('');
    expect(await page.getByRole('heading', { name: 'Join the organization that invited you?' }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Join', exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Close' }).click();
    await page.goto(links.bo);
    await page.getByRole('alert').filter({ hasText: 'was already used' }).waitFor();
    expect(await page.getByRole('button', { name: 'Join', exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Close' }).click();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('the owner sees the new member with role member, changes the role, and reads the invitation sent and accepted in the audit log', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').fill(server.key);
    await page.getByRole('button', { name: 'Sign in with key' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    await page.getByRole('link', { name: 'Organization' }).click();
    const role = page.getByLabel('Role of bo@example.com');
    await role.waitFor();
    expect(await page.locator('.banner').count()).toBe(0); // what the page told bo is not shown to the next person
    expect(await role.inputValue()).toBe('member');
    // Spent: no longer open; the other one still is.
    const open = page.getByRole('table', { name: 'Open invitations' });
    await open.getByRole('cell', { name: 'carl@example.com' }).waitFor();
    expect(await open.getByRole('cell', { name: 'bo@example.com' }).count()).toBe(0);
    await role.selectOption('admin');
    await expect
      .poll(
        async () =>
          (await api('GET', `/api/v1/orgs/${(await api('GET', '/api/v1/users/me')).body.org_id}`)).body.members,
      )
      .toContainEqual(expect.objectContaining({ email: 'bo@example.com', role: 'admin' }));
    await browser.shot('13-owner-members');

    await page.getByRole('link', { name: 'Audit log' }).click();
    const log = page.getByRole('table', { name: 'Audit log, newest first' });
    await log.waitFor();
    const rows = async () => (await log.getByRole('row').allTextContents()).slice(1);
    await expect.poll(async () => (await rows())[0]).toContain('Role changed');
    const text = (await rows()).join('\n');
    expect(text).toContain('Invitation sent');
    expect(text).toContain('Invitation accepted');
    expect(text).toMatch(/bo@example\.com.*Invitation accepted.*member/);
    expect(text).toMatch(/Invitation sent.*bo@example\.com · member/);
    expect(text).toContain('Org updated');
    // Newest first: the role change, then the acceptance, then the invitations.
    const order = ['Role changed', 'Invitation accepted', 'Invitation sent'].map((a) => text.indexOf(a));
    expect(order).toEqual([...order].sort((x, y) => x - y));
    expect(text).not.toContain('acsi_');
    // Nor in the server's log (the link's request included).
    expect(server.output()).not.toContain(new URL(links.bo).searchParams.get('invitation')!);
    // These pages, since the last page load (the spent link), ran inside the Content-Security-Policy.
    expect(await page.evaluate(() => window.__violations)).toEqual([]);
    await browser.shot('14-audit-log');
  });
});
