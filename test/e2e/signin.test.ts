import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchBrowser, type Browser } from '#test/helpers/browser.ts';
import { startServerProcess, type ServerProcess } from '#test/helpers/server-process.ts';
import { startTestIssuer, type TestIssuer } from '#test/helpers/oidc-issuer.ts';

/**
 * Signing in to the web console through the development OpenID provider `npm start` runs (no
 * OIDC_ISSUER): Chromium (playwright-core) against `npm start` as a child process, one for the file.
 */
declare const sessionStorage: { length: number };
declare const document: {
  cookie: string;
  addEventListener(
    type: 'securitypolicyviolation',
    fn: (e: { blockedURI: string; effectiveDirective: string }) => void,
  ): void;
};

let server: ServerProcess;
let browser: Browser;
let page: Page;
let dataDir: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does)`);
  dataDir = mkdtempSync(join(tmpdir(), 'acs-signin-e2e-'));
  const env: Record<string, string> = { OIDC_ISSUER: '', OIDC_AUDIENCE: '', OIDC_CLIENT_ID: '', SIGNUP_MODE: '' };
  server = await startServerProcess(dataDir, ['--memory'], env);
  browser = await launchBrowser('signin');
  page = browser.page;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.interrupt();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('signing in to the console with the development OpenID provider', { timeout: 90_000 }, () => {
  it('npm start prints where and how to sign in', () => {
    const password = readFileSync(join(dataDir, 'dev-signin-password'), 'utf8').trim();
    expect(server.output()).toContain(`sign in:  open ${server.url}/`);
    expect(server.output()).toContain(`password ${password}`);
    expect(server.output()).toContain(`${server.url}/oidc`);
  });

  it('goes to the provider, signs in with an email and the password, and comes back signed in', async () => {
    const password = readFileSync(join(dataDir, 'dev-signin-password'), 'utf8').trim();
    const calls: string[] = [];
    page.on('request', (r) => void calls.push(`${r.method()} ${new URL(r.url()).pathname}`));
    await page.goto(server.url);
    await page.getByRole('button', { name: 'Sign in with OpenID' }).click();
    await page.waitForURL(/\/oidc\/interaction\//);
    expect(await page.content()).toContain('Development only');
    await browser.shot('01-provider-login');
    // A wrong password first: the provider's page says so and nothing is issued.
    await page.getByLabel('Email').fill('Dana@Example.com');
    await page.getByLabel('Development password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not the development password' }).waitFor();
    await page.getByLabel('Development password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back at the console: signed in as that person, the code gone from the address bar.
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    expect(await page.locator('header .user').textContent()).toBe('dana@example.com');
    expect(new URL(page.url()).pathname).toBe('/');
    expect(page.url()).not.toContain('code=');
    await browser.shot('02-signed-in');
    expect(calls).toEqual(
      expect.arrayContaining(['POST /api/auth/oidc/start', 'POST /oidc/token', 'POST /api/auth/oidc/session']),
    );
    // The page keeps nothing: the state and verifier are spent, the session cookie is HttpOnly.
    const kept = await page.evaluate(() => ({ session: sessionStorage.length, cookie: document.cookie }));
    expect(kept).toEqual({ session: 0, cookie: '' });
    const session = (await browser.context.cookies(server.url)).find((c) => c.name.startsWith('acs_session'));
    expect(session?.httpOnly).toBe(true);
    const me = await page.evaluate(async () => (await fetch('/api/v1/users/me')).json());
    expect(me).toMatchObject({ email: 'dana@example.com', role: 'owner' });
  });

  it('refuses a return this tab did not start (a forged state): no token request, no session', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in with OpenID' }).waitFor();
    const calls: string[] = [];
    page.on('request', (r) => void calls.push(`${r.method()} ${new URL(r.url()).pathname}`));
    await page.goto(`${server.url}/auth/callback?code=attacker-code&state=forged`);
    await page.getByText('not started from this tab').waitFor();
    expect(calls.filter((c) => c.startsWith('POST'))).toEqual([]);
    expect(new URL(page.url()).search).toBe('');
    expect((await browser.context.cookies(server.url)).some((c) => c.name.startsWith('acs_session'))).toBe(false);
    await browser.shot('03-forged-state');
  });

  it('opened on localhost, signs in through the provider on 127.0.0.1 (its token endpoint another origin: CORS and CSP allow it)', async () => {
    const password = readFileSync(join(dataDir, 'dev-signin-password'), 'utf8').trim();
    const local = server.url.replace('127.0.0.1', 'localhost');
    const violations: string[] = [];
    page.on('console', (m) => void (m.type() === 'error' && violations.push(m.text())));
    await page.goto(local);
    await page.getByRole('button', { name: 'Sign in with OpenID' }).click();
    await page.waitForURL(/127\.0\.0\.1:\d+\/oidc\/interaction\//);
    await page.getByLabel('Email').fill('lee@example.com');
    await page.getByLabel('Development password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    expect(new URL(page.url()).host).toBe(new URL(local).host);
    expect(await page.locator('header .user').textContent()).toBe('lee@example.com');
    expect(violations).toEqual([]);
  });
});

/**
 * The same with an external issuer of the test's own on another origin (its own loopback port): the
 * console's Content-Security-Policy names exactly that origin in `connect-src` (the code's redemption
 * at its token endpoint) and nothing wider, and the sign-in goes through with no policy violation.
 */
describe('signing in to the console with an external issuer on another origin', { timeout: 90_000 }, () => {
  let external: ServerProcess;
  let idp: TestIssuer;
  let externalDir: string;

  beforeAll(async () => {
    idp = await startTestIssuer();
    externalDir = mkdtempSync(join(tmpdir(), 'acs-signin-ext-e2e-'));
    external = await startServerProcess(externalDir, ['--memory'], {
      OIDC_ISSUER: idp.issuer,
      OIDC_AUDIENCE: 'acs-api',
      OIDC_CLIENT_ID: 'acs-console',
      SIGNUP_MODE: '',
    });
    idp.corsOrigins.push(new URL(external.url).origin);
    await browser.context.clearCookies();
  }, 120_000);

  afterAll(async () => {
    await external?.interrupt();
    await idp?.close();
    if (externalDir) rmSync(externalDir, { recursive: true, force: true });
  });

  it("the policy names the issuer's origin for connect-src and nothing wider; forms stay on this origin", async () => {
    const csp = (await fetch(`${external.url}/`)).headers.get('content-security-policy') ?? '';
    const directive = (name: string) =>
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .find(([n]) => n === name)
        ?.slice(1);
    const host = new URL(external.url).host;
    expect(directive('connect-src')?.sort()).toEqual(
      ["'self'", `ws://${host}`, `wss://${host}`, new URL(idp.issuer).origin].sort(),
    );
    // The page reaches the issuer by navigation (location.assign), which form-action does not govern: no form goes there.
    expect(directive('form-action')).toEqual(["'self'"]);
    expect(directive('default-src')).toEqual(["'none'"]);
  });

  it('redeems the code at the external token endpoint from the page and comes back signed in, with no violation', async () => {
    idp.login = { sub: 'ext-ann', email: 'ann@ext.example' };
    const violations: string[] = [];
    page.on('console', (m) => void (m.type() === 'error' && violations.push(m.text())));
    await page.goto(external.url);
    await page.getByRole('button', { name: 'Sign in with OpenID' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    expect(await page.locator('header .user').textContent()).toBe('ann@ext.example');
    expect(new URL(page.url()).origin).toBe(new URL(external.url).origin);
    // The page itself called the token endpoint, cross-origin, with its PKCE verifier.
    expect(idp.tokenRequests).toEqual([{ origin: new URL(external.url).origin, pkce: true }]);
    expect(violations).toEqual([]);
    const me = await page.evaluate(async () => (await fetch('/api/v1/users/me')).json());
    expect(me).toMatchObject({ email: 'ann@ext.example', role: 'owner' });
    await browser.shot('04-external-issuer');
  });

  it('the same issuer on another origin (localhost for 127.0.0.1) is blocked by the policy', async () => {
    const other = idp.issuer.replace('127.0.0.1', 'localhost');
    const blocked = await page.evaluate(async (url: string) => {
      const violation = new Promise<string>((resolve) =>
        document.addEventListener('securitypolicyviolation', (e) => resolve(`${e.effectiveDirective} ${e.blockedURI}`)),
      );
      const result = await fetch(`${url}/.well-known/openid-configuration`).then(
        () => 'fetched',
        () => 'refused',
      );
      return { result, seen: await violation };
    }, other);
    expect(blocked.result).toBe('refused');
    expect(blocked.seen).toMatch(/^connect-src http:\/\/localhost:/);
  });
});
