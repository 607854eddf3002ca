import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { personUserId } from '#shared/accounts/accounts.ts';
import { DEV_KEYS_FILE, DEV_PASSWORD_FILE, devIssuerSecrets } from '#infra/local/dev-issuer.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';
import { authorize, CookieJar, devTokens, pkce, redeem, startSignIn } from '#test/helpers/dev-signin.ts';

/**
 * The development OpenID provider `npm start` runs without OIDC_ISSUER, over HTTP against the local
 * stack (one for the file): its tokens on API routes, its login step, and a hostile page's attempts
 * at the console's exchange.
 */
let stack: TestStack;
let password: string;
const saved = { ...process.env };

beforeAll(async () => {
  delete process.env.OIDC_ISSUER;
  delete process.env.OIDC_AUDIENCE;
  delete process.env.OIDC_CLIENT_ID;
  delete process.env.SIGNUP_MODE;
  stack = await startTestStack({ devIssuer: true });
  password = stack.devIssuer!.password;
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  process.env = saved;
});

const bearer = (token: string) => ({ key: null, headers: { authorization: `Bearer ${token}` } });
const exchange = (idToken: string, headers: Record<string, string>) =>
  stack.call('POST', '/api/auth/oidc/session', { key: null, headers, body: { id_token: idToken } });

describe('the development OpenID provider', () => {
  it('runs on the gateway own port under /oidc, as the configured issuer, with its keys and password in the data dir', async () => {
    expect(stack.devIssuer!.issuer).toBe(`${stack.url}/oidc`);
    const res = await fetch(`${stack.url}/oidc/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as Record<string, unknown>;
    expect(doc.issuer).toBe(`${stack.url}/oidc`);
    expect(doc.code_challenge_methods_supported).toEqual(['S256']);
    expect(doc.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(['RS256', 'ES256']));
    const jwks = (await (await fetch(String(doc.jwks_uri))).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys.map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
    expect(JSON.stringify(jwks)).not.toMatch(/"d":/); // public parts only
    for (const file of [DEV_KEYS_FILE, DEV_PASSWORD_FILE])
      expect(statSync(join(stack.dataDir, file)).mode & 0o777, file).toBe(0o600);
    expect(password.length).toBeGreaterThanOrEqual(16);
    // Kept: a restart reads the same keys and password (tokens and the printed password stay good).
    const again = await devIssuerSecrets(stack.dataDir);
    expect(again.password).toBe(password);
    expect(again.keys.jwks.map((k) => k.kid).sort()).toEqual(jwks.keys.map((k) => k.kid).sort());
    // The start endpoint names it.
    const start = await startSignIn(stack.url, new CookieJar());
    expect(start).toMatchObject({ issuer: `${stack.url}/oidc`, client_id: 'acs-console' });
  });

  it('signs a person in by email and password: the access token works on API routes, the ID token does not', async () => {
    const { accessToken, idToken } = await devTokens(stack.url, 'Ann@Example.com', password);
    const me = await stack.call('GET', '/api/v1/users/me', bearer(accessToken));
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({
      id: personUserId(`${stack.url}/oidc`, 'ann@example.com'),
      email: 'ann@example.com',
      role: 'owner',
    });
    // Other routes, reads and writes (a Bearer token needs no Origin).
    expect((await stack.call('GET', '/api/organizations', bearer(accessToken))).body.current_org_id).toBe(
      me.body.org_id,
    );
    const key = await stack.call('POST', '/api/keys', { ...bearer(accessToken), body: { name: 'from a token' } });
    expect(key.status, key.text).toBe(200);
    expect((await stack.call('GET', '/api/v1/users/me', { key: key.body.key })).body.id).toBe(me.body.id);
    const asAccess = await stack.call('GET', '/api/v1/users/me', bearer(idToken));
    expect(asAccess.status).toBe(401);
    expect(asAccess.body.detail).toMatch(/audience|ID token/);
  });

  it('refuses a wrong password or a malformed email at its login step, and an authorization without PKCE', async () => {
    const start = await startSignIn(stack.url, new CookieJar());
    const wrong = await authorize(
      start,
      { email: 'eve@example.com', password: 'guess' },
      { challenge: pkce().challenge },
    );
    expect(wrong.callback).toBeUndefined();
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('not the development password');
    const bad = await authorize(start, { email: 'not an email', password }, { challenge: pkce().challenge });
    expect(bad.callback).toBeUndefined();
    expect(bad.status).toBe(400);
    const noPkce = await authorize(start, { email: 'eve@example.com', password });
    expect(noPkce.callback?.searchParams.get('error')).toBe('invalid_request');
    expect(noPkce.callback?.searchParams.get('code')).toBeNull();
  });

  it('redeems a code once, only with its PKCE verifier; its token endpoint answers CORS only to the console origins', async () => {
    const start = await startSignIn(stack.url, new CookieJar());
    const { verifier, challenge } = pkce();
    const auth = await authorize(start, { email: 'pk@example.com', password }, { challenge });
    const code = auth.callback!.searchParams.get('code')!;
    expect((await redeem(start, code, pkce().verifier)).status).toBe(400);
    expect((await redeem(start, code, verifier)).status).toBe(200);
    // Single-use.
    expect((await redeem(start, code, verifier)).status).toBe(400);
    // A page of another origin gets no CORS answer (the browser would not let it read the tokens).
    const second = pkce();
    const other = await authorize(start, { email: 'pk@example.com', password }, { challenge: second.challenge });
    const foreign = await fetch(start.token_endpoint, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: other.callback!.searchParams.get('code')!,
        redirect_uri: start.redirect_uri,
        client_id: start.client_id,
        code_verifier: second.verifier,
      }),
    });
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    expect(await foreign.text()).not.toContain('id_token');
  });
});

describe("the console's exchange against a hostile page", () => {
  it('exchanges the ID token for the session cookie with this browser nonce cookie and its own Origin', async () => {
    const { idToken, jar } = await devTokens(stack.url, 'bo@example.com', password);
    const res = await exchange(idToken, { cookie: jar.header(), origin: stack.url });
    expect(res.status, res.text).toBe(200);
    jar.take(new Response(null, { headers: res.headers }));
    const me = await stack.call('GET', '/api/v1/users/me', {
      key: null,
      headers: { cookie: jar.header(), origin: stack.url },
    });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe('bo@example.com');
  });

  it('refuses: a foreign or missing Origin, no nonce cookie, another browser nonce (login CSRF), a second nonce cookie', async () => {
    const { idToken, jar } = await devTokens(stack.url, 'mallory@example.com', password);
    const foreign = await exchange(idToken, { cookie: jar.header(), origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.body.detail).toMatch(/Origin/);
    expect((await exchange(idToken, { cookie: jar.header() })).status).toBe(403);
    const noCookie = await exchange(idToken, { origin: stack.url });
    expect(noCookie.status).toBe(401);
    expect(noCookie.body.detail).toMatch(/no sign-in in progress/);
    // The attacker's ID token planted in a victim's browser, which holds a sign-in of its own.
    const victim = new CookieJar();
    await startSignIn(stack.url, victim);
    const csrf = await exchange(idToken, { cookie: victim.header(), origin: stack.url });
    expect(csrf.status).toBe(401);
    expect(csrf.body.detail).toMatch(/nonce/);
    const both = await exchange(idToken, { cookie: `${jar.header()}; ${victim.header()}`, origin: stack.url });
    expect(both.status).toBe(401);
    for (const res of [foreign, noCookie, csrf, both])
      expect(res.headers.get('set-cookie') ?? '').not.toMatch(/acs_session/);
  });

  // Last in the file: it uses up this address's sign-in attempts for the minute.
  it('holds sign-in attempts to 20 a minute per address: a forged X-Forwarded-For or viewer address is not another address', async () => {
    // Within one limiter window (fixed minutes): should the minute turn during a run, it is run again in the new one.
    const window = () => Math.floor(Date.now() / 60_000);
    for (let run = 0; run < 2; run++) {
      const began = window();
      const statuses: number[] = [];
      for (let i = 0; i < 25; i++) {
        const forged = `198.51.100.${i + 1}`;
        const res = await exchange('x', {
          origin: stack.url,
          'x-forwarded-for': forged,
          'cloudfront-viewer-address': `${forged}:443`,
        });
        statuses.push(res.status);
      }
      if (window() !== began) continue;
      // The earlier tests of this file may have made some attempts of this minute already.
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(5);
      expect(statuses.at(-1)).toBe(429);
      return;
    }
    throw new Error('The minute turned during both runs');
  });
});
