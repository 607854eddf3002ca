import { describe, expect, it } from 'vitest';
import { allowedOrigins, corsHeaders, originVerdict } from '#shared/http/cors.ts';
import { sessionCookie, sessionCookieValues, sessionSeconds, sessionToken } from '#shared/auth/sessions.ts';

describe('CORS_ORIGINS', () => {
  it('is a comma-separated list of origins; a bad entry fails with the key named', () => {
    expect(allowedOrigins({ CORS_ORIGINS: ' https://a.example, http://localhost:3001/ ' })).toEqual([
      'https://a.example',
      'http://localhost:3001',
    ]);
    expect(allowedOrigins({})).toEqual([]);
    expect(() => allowedOrigins({ CORS_ORIGINS: 'https://a.example/path' })).toThrow(
      /CORS_ORIGINS: "https:\/\/a.example\/path"/,
    );
    expect(() => allowedOrigins({ CORS_ORIGINS: 'ftp://a.example' })).toThrow(/CORS_ORIGINS/);
  });

  it('"*" lets any origin read, never with credentials', () => {
    expect(corsHeaders('https://any.example', ['*'], false)).toMatchObject({
      'access-control-allow-origin': 'https://any.example',
    });
    expect(corsHeaders('https://any.example', ['*'], false)['access-control-allow-credentials']).toBeUndefined();
    expect(corsHeaders('https://a.example', ['https://a.example'], false)['access-control-allow-credentials']).toBe(
      'true',
    );
    expect(corsHeaders(undefined, ['*'], true)).toEqual({});
  });

  it("allows the headers OpenHands' own clients send (Agent Canvas, the TypeScript client), read from their packages", async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const dir = 'node_modules/@openhands/agent-canvas/build/assets';
    const bundle = readdirSync(dir)
      .filter((f) => f.endsWith('.js'))
      .map((f) => readFileSync(`${dir}/${f}`, 'utf8'))
      .join('\n');
    const sent = new Set(
      [...bundle.matchAll(/X-OpenHands-[A-Za-z-]+|X-Org-Id|X-Expose-Secrets|X-Session-API-Key/g)].map((m) =>
        m[0].toLowerCase(),
      ),
    );
    expect(sent.size).toBeGreaterThanOrEqual(5);
    const allowed = corsHeaders('https://canvas.example', ['https://canvas.example'], true)[
      'access-control-allow-headers'
    ]!.split(', ');
    for (const h of sent) expect(allowed, h).toContain(h);
  });
});

describe('the Origin check of cookie requests', () => {
  const allowed = ['https://ui.example', '*'];
  const self = ['https://api.example'];
  it.each([
    ['POST', { origin: 'https://ui.example' }, 'verified'],
    ['POST', { origin: 'https://api.example' }, 'verified'],
    ['POST', { origin: 'https://evil.example' }, 'refused'],
    ['POST', { origin: '*' }, 'refused'],
    ['POST', { origin: 'null' }, 'refused'],
    ['POST', {}, 'refused'],
    ['POST', { 'sec-fetch-site': 'same-origin' }, 'refused'],
    ['GET', { 'sec-fetch-site': 'same-origin' }, 'same-origin-read'],
    ['GET', { 'sec-fetch-site': 'same-site' }, 'refused'],
    ['GET', {}, 'refused'],
  ] as const)('%s %j -> %s', (method, headers, verdict) => {
    expect(originVerdict(method, headers, allowed, self)).toBe(verdict);
  });
});

describe('the session cookie', () => {
  it('is Secure only over https, and removal sets Max-Age=0', () => {
    expect(sessionCookie('t', 60, true)).toBe(
      '__Host-acs_session=t; Path=/; HttpOnly; SameSite=Strict; Max-Age=60; Secure',
    );
    expect(sessionCookie(null, 60, false)).toBe('acs_session_80=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0');
    expect(sessionCookie('t', 60, false, '3000')).toBe(
      'acs_session_3000=t; Path=/; HttpOnly; SameSite=Strict; Max-Age=60',
    );
  });
  it('over http is named for the port (from PUBLIC_BASE_URL or Host), and two of it are never read as one', () => {
    const http = (cookie: string, host = '127.0.0.1:3000') => ({ cookie, host, 'x-forwarded-proto': 'http' });
    expect(sessionToken(http('acs_session_3000=mine'), {})).toBe('mine');
    expect(sessionToken(http('acs_session_4000=other; acs_session=old'), {})).toBeUndefined();
    expect(sessionToken(http('acs_session_3000=planted; acs_session_3000=mine'), {})).toBeUndefined();
    expect(sessionCookieValues(http('acs_session_3000=planted; acs_session_3000=mine'), {})).toEqual([
      'planted',
      'mine',
    ]);
    expect(sessionToken(http('acs_session_80=x', 'localhost'), {})).toBe('x');
    expect(sessionToken(http('acs_session_8443=x', 'anything'), { PUBLIC_BASE_URL: 'http://h:8443' })).toBe('x');
  });
  it('over https is read only under its __Host- name, which a subdomain cannot set', () => {
    const cookie = 'acs_session_80=tossed; __Host-acs_session=real';
    expect(sessionToken({ cookie, 'x-forwarded-proto': 'https' }, {})).toBe('real');
    expect(sessionToken({ cookie: 'acs_session_80=tossed', 'x-forwarded-proto': 'https' }, {})).toBeUndefined();
    expect(sessionToken({ cookie, 'x-forwarded-proto': 'http' }, {})).toBe('tossed');
    expect(sessionToken({ cookie, 'x-forwarded-proto': 'http' }, { PUBLIC_BASE_URL: 'https://api.example.com' })).toBe(
      'real',
    );
  });
  it('lives SESSION_HOURS, default 12, at most a week', () => {
    expect(sessionSeconds({})).toBe(43_200);
    expect(sessionSeconds({ SESSION_HOURS: '1' })).toBe(3600);
    expect(() => sessionSeconds({ SESSION_HOURS: '0' })).toThrow(/SESSION_HOURS/);
    expect(() => sessionSeconds({ SESSION_HOURS: '169' })).toThrow(/SESSION_HOURS/);
    expect(() => sessionSeconds({ SESSION_HOURS: 'x' })).toThrow(/SESSION_HOURS/);
  });
});
