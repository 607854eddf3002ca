import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { personUserId } from '#shared/accounts/accounts.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';
import { startTestIssuer, type TestIssuer } from '#test/helpers/oidc-issuer.ts';

/**
 * Sign-in with an external OpenID issuer of the test's own (a JWKS on loopback), organizations,
 * operators, key expiry and the audit log, over HTTP against the local stack (one for the file).
 */
let stack: TestStack;
let idp: TestIssuer;
const AUD = 'acs-api';
const CLIENT = 'acs-console';
const saved = { ...process.env };

beforeAll(async () => {
  idp = await startTestIssuer();
  process.env.OIDC_ISSUER = idp.issuer;
  process.env.OIDC_AUDIENCE = AUD;
  process.env.OIDC_CLIENT_ID = CLIENT;
  process.env.OPERATORS = 'op@example.com';
  delete process.env.SIGNUP_MODE;
  stack = await startTestStack();
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await idp?.close();
  process.env = saved;
});

const now = () => Math.floor(Date.now() / 1000);
/** An access token for a person (verified email unless told otherwise). */
const access = (sub: string, extra: Record<string, unknown> = {}) =>
  idp.sign({ sub, aud: AUD, email: `${sub}@example.com`, email_verified: true, ...extra });
const bearer = (token: string) => ({ key: null, headers: { authorization: `Bearer ${token}` } });
const me = async (token: string) => stack.call('GET', '/api/v1/users/me', bearer(token));

describe('OpenID access tokens on API routes', () => {
  it('with OIDC_ISSUER set, the development provider does not start', async () => {
    expect(stack.devIssuer).toBeUndefined();
    expect((await fetch(`${stack.url}/oidc/.well-known/openid-configuration`)).status).toBe(404);
    const start = await stack.call('POST', '/api/auth/oidc/start', { key: null });
    expect(start.body.issuer).toBe(idp.issuer);
  });

  it('accepts an RS256 and an ES256 access token: the person is (issuer, sub) with a personal organization', async () => {
    const res = await me(await access('ann'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: personUserId(idp.issuer, 'ann'), email: 'ann@example.com', role: 'owner' });
    expect(res.body.org_id).toMatch(/^org_[0-9a-f]{24}$/);
    const es = await me(await idp.sign({ sub: 'ann', aud: AUD }, { alg: 'ES256' }));
    expect(es.status).toBe(200);
    expect(es.body.id).toBe(res.body.id);
    expect(es.body.org_id).toBe(res.body.org_id);
    // The same email from another subject is another person.
    const other = await me(await access('ann2', { email: 'ann@example.com' }));
    expect(other.body.id).not.toBe(res.body.id);
  });

  it('refuses each bad token with 401 and a clear detail', async () => {
    const cases: [string, Promise<string> | string, RegExp][] = [
      ['wrong iss', idp.sign({ sub: 'ann', aud: AUD, iss: 'https://evil.example' }), /wrong issuer/],
      ['wrong aud', idp.sign({ sub: 'ann', aud: 'someone-else' }), /wrong audience/],
      ['expired', idp.sign({ sub: 'ann', aud: AUD, iat: now() - 7200, exp: now() - 3600 }), /expired/],
      ['not yet valid', idp.sign({ sub: 'ann', aud: AUD, nbf: now() + 3600 }), /not yet valid/],
      ['alg none', idp.unsigned({ sub: 'ann', aud: AUD }), /algorithm not allowed|malformed/],
      ['HMAC with the public key', idp.hmacWithPublicKey({ sub: 'ann', aud: AUD }), /algorithm not allowed/],
      ['unknown kid', idp.sign({ sub: 'ann', aud: AUD }, { key: 'unknown', kid: 'nobody' }), /unknown signing key/],
      ['known kid, foreign key', idp.sign({ sub: 'ann', aud: AUD }, { key: 'unknown' }), /bad signature/],
      ['an ID token', idp.sign({ sub: 'ann', aud: AUD, nonce: 'n' }), /ID token/],
      ['Cognito ID token', idp.sign({ sub: 'ann', token_use: 'id', aud: AUD }), /ID token/],
      ['Cognito, other client', idp.sign({ sub: 'ann', token_use: 'access', client_id: 'other' }), /another client/],
      ['no sub', idp.sign({ aud: AUD }), /subject|malformed/],
    ];
    for (const [name, token, detail] of cases) {
      const res = await me(await token);
      expect(res.status, name).toBe(401);
      expect(res.body.detail, name).toMatch(detail);
      expect(res.body.detail, name).toMatch(/^Invalid token|^Token/);
    }
    // Cognito's access token (token_use + client_id, no aud) works.
    const cognito = await me(await idp.sign({ sub: 'ann', token_use: 'access', client_id: AUD }));
    expect(cognito.status).toBe(200);
  });

  it('refetches the JWKS for unknown kids at most once per cooldown, however many arrive', async () => {
    const before = idp.jwksFetches;
    for (let i = 0; i < 20; i++) {
      const res = await me(await idp.sign({ sub: 'ann', aud: AUD }, { key: 'unknown', kid: `random-${i}` }));
      expect(res.status).toBe(401);
    }
    expect(idp.jwksFetches - before).toBeLessThanOrEqual(1);
  });

  it('tells a Bearer value apart by its form: keys and conversation keys still work, junk is a plain 401', async () => {
    expect(
      (await stack.call('GET', '/api/v1/users/me', { key: null, headers: { authorization: `Bearer ${stack.devKey}` } }))
        .status,
    ).toBe(200);
    const junk = await stack.call('GET', '/api/v1/users/me', bearer('not-a-token'));
    expect(junk.status).toBe(401);
    expect(junk.body).toEqual({ detail: 'Unauthorized' });
  });
});

describe('sign-up policy', () => {
  it('closed: an unknown person is refused, a known one still signs in', async () => {
    await me(await access('known'));
    process.env.SIGNUP_MODE = 'closed';
    try {
      const res = await me(await access('stranger'));
      expect(res.status).toBe(401);
      expect(res.body.detail).toMatch(/Sign-up is closed/);
      expect((await me(await access('known'))).status).toBe(200);
    } finally {
      delete process.env.SIGNUP_MODE;
    }
  });

  it('invite: only an invited, verified email joins, into the inviting organization', async () => {
    const owner = await access('inviter');
    const orgId = (await me(owner)).body.org_id;
    const inv = await stack.call('POST', `/api/v1/orgs/${orgId}/invitations`, {
      ...bearer(owner),
      body: { email: 'Invitee@Example.com' },
    });
    expect(inv.status).toBe(200);
    process.env.SIGNUP_MODE = 'invite';
    try {
      const unverified = await me(await access('invitee', { email: 'invitee@example.com', email_verified: false }));
      expect(unverified.status).toBe(401);
      expect(unverified.body.detail).toMatch(/invitation/);
      const uninvited = await me(await access('nobody'));
      expect(uninvited.status).toBe(401);
      const joined = await me(await access('invitee', { email: 'invitee@example.com' }));
      expect(joined.status).toBe(200);
      expect(joined.body).toMatchObject({ org_id: orgId, role: 'member', email: 'invitee@example.com' });
      // The invitation was single-use.
      const again = await me(await access('invitee-twin', { email: 'invitee@example.com' }));
      expect(again.status).toBe(401);
    } finally {
      delete process.env.SIGNUP_MODE;
    }
  });
});

describe('organizations', () => {
  it('owner invites, the invitee accepts by verified email, roles hold, the last owner stays, a removed member is cut off', async () => {
    const olga = await access('olga');
    const adam = await access('adam');
    const mia = await access('mia');
    const orgId = (await me(olga)).body.org_id;
    const miaPersonal = (await me(mia)).body.org_id;
    // Agent Canvas's shape.
    expect((await stack.call('GET', '/api/organizations', bearer(olga))).body).toEqual({
      items: [{ id: orgId, name: 'Personal', is_personal: true }],
      current_org_id: orgId,
    });
    const invite = async (email: string, role: string, as = olga) =>
      stack.call('POST', `/api/v1/orgs/${orgId}/invitations`, { ...bearer(as), body: { email, role } });
    const forAdam = await invite('adam@example.com', 'admin');
    const forMia = await invite('mia@example.com', 'member');
    expect(forAdam.body.link).toContain(forAdam.body.token);
    // Listed without tokens.
    const listed = await stack.call('GET', `/api/v1/orgs/${orgId}/invitations`, bearer(olga));
    expect(listed.body.map((i: { email: string }) => i.email).sort()).toEqual(['adam@example.com', 'mia@example.com']);
    expect(listed.text).not.toContain(forAdam.body.token);
    // Someone else's email cannot accept; a forged token is a 404.
    expect((await stack.call('POST', `/api/v1/invitations/${forAdam.body.token}/accept`, bearer(mia))).status).toBe(
      403,
    );
    expect((await stack.call('POST', `/api/v1/invitations/acsi_${'A'.repeat(43)}/accept`, bearer(mia))).status).toBe(
      404,
    );
    expect((await stack.call('POST', `/api/v1/invitations/${forAdam.body.token}/accept`, bearer(adam))).status).toBe(
      200,
    );
    expect((await stack.call('POST', `/api/v1/invitations/${forMia.body.token}/accept`, bearer(mia))).status).toBe(200);
    // Single use.
    expect((await stack.call('POST', `/api/v1/invitations/${forMia.body.token}/accept`, bearer(mia))).status).toBe(404);
    expect((await me(mia)).body).toMatchObject({ org_id: orgId, role: 'member' });
    // Mia's personal organization closed, being empty.
    expect((await stack.call('GET', `/api/v1/orgs/${miaPersonal}`, bearer(mia))).status).toBe(404);
    const org = await stack.call('GET', `/api/v1/orgs/${orgId}`, bearer(mia));
    expect(org.body.members.map((m: { role: string }) => m.role).sort()).toEqual(['admin', 'member', 'owner']);
    // A member cannot invite or change roles; an admin cannot invite an owner or touch one.
    expect((await invite('x@example.com', 'member', mia)).status).toBe(403);
    expect((await invite('x@example.com', 'owner', adam)).status).toBe(403);
    const olgaId = (await me(olga)).body.id;
    const adamId = (await me(adam)).body.id;
    const miaId = (await me(mia)).body.id;
    const patch = (as: string, user: string, role: string) =>
      stack.call('PATCH', `/api/v1/orgs/${orgId}/members/${user}`, { ...bearer(as), body: { role } });
    expect((await patch(mia, adamId, 'member')).status).toBe(403);
    expect((await patch(adam, olgaId, 'member')).status).toBe(403);
    expect((await stack.call('DELETE', `/api/v1/orgs/${orgId}/members/${olgaId}`, bearer(adam))).status).toBe(403);
    // The last owner can neither leave nor step down.
    expect((await stack.call('DELETE', `/api/v1/orgs/${orgId}/members/${olgaId}`, bearer(olga))).status).toBe(409);
    expect((await patch(olga, olgaId, 'admin')).status).toBe(409);
    // Racing demotions of two owners: at most one holds.
    expect((await patch(olga, adamId, 'owner')).status).toBe(200);
    const race = await Promise.all([patch(olga, olgaId, 'member'), patch(adam, adamId, 'member')]);
    expect(race.filter((r) => r.status === 200).length).toBe(1);
    const owners = (await stack.call('GET', `/api/v1/orgs/${orgId}`, bearer(mia))).body.members.filter(
      (m: { role: string }) => m.role === 'owner',
    );
    expect(owners.length).toBe(1);
    const owner = owners[0].user_id === olgaId ? olga : adam;
    // Mia's key works until she is removed; then it, and her cookie session, stop; she has a new personal org.
    const miaKey = (await stack.call('POST', '/api/keys', { ...bearer(mia), body: { name: 'mia laptop' } })).body.key;
    expect((await stack.call('GET', '/api/v1/users/me', { key: miaKey })).status).toBe(200);
    const cookie = (await stack.call('POST', '/api/authenticate', { key: miaKey })).headers
      .get('set-cookie')!
      .split(';')[0]!;
    expect(
      (await stack.call('GET', '/api/v1/users/me', { key: null, headers: { cookie, 'sec-fetch-site': 'same-origin' } }))
        .status,
    ).toBe(200);
    const removed = await stack.call('DELETE', `/api/v1/orgs/${orgId}/members/${miaId}`, bearer(owner));
    expect(removed.status).toBe(200);
    expect((await stack.call('GET', '/api/v1/users/me', { key: miaKey })).status).toBe(401);
    expect(
      (await stack.call('GET', '/api/v1/users/me', { key: null, headers: { cookie, 'sec-fetch-site': 'same-origin' } }))
        .status,
    ).toBe(401);
    const after = await me(mia);
    expect(after.body).toMatchObject({ org_id: removed.body.new_org_id, role: 'owner' });
    // A foreign organization is a 404.
    expect((await stack.call('GET', `/api/v1/orgs/${orgId}`, bearer(mia))).status).toBe(404);
  }, 60_000);
});

describe('operators', () => {
  it('suspend and reactivate a user: keys, tokens and conversation keys refused at once; non-operators refused', async () => {
    const op = await access('op', { email: 'op@example.com' });
    const victimToken = await access('suspect');
    const victimId = (await me(victimToken)).body.id;
    const key = (await stack.call('POST', '/api/keys', { ...bearer(victimToken), body: { name: 'k' } })).body.key;
    // Not an operator: an unverified operator email does not count either.
    const fake = await access('fake-op', { email: 'op@example.com', email_verified: false });
    expect((await stack.call('POST', `/api/v1/admin/users/${victimId}/suspend`, bearer(fake))).status).toBe(403);
    expect((await stack.call('POST', `/api/v1/admin/users/${victimId}/suspend`, bearer(victimToken))).status).toBe(403);
    const s = await stack.call('POST', `/api/v1/admin/users/${victimId}/suspend`, bearer(op));
    expect(s.status).toBe(200);
    for (const res of [await me(victimToken), await stack.call('GET', '/api/v1/users/me', { key })]) {
      expect(res.status).toBe(401);
      expect(res.body.detail).toBe('This account is suspended');
    }
    expect((await stack.call('POST', `/api/v1/admin/users/${victimId}/reactivate`, bearer(op))).status).toBe(200);
    expect((await stack.call('GET', '/api/v1/users/me', { key })).status).toBe(200);
  });

  it('suspends an organization: every member refused; the audit log names the operator', async () => {
    const op = await access('op', { email: 'op@example.com' });
    const member = await access('orgmember');
    const orgId = (await me(member)).body.org_id;
    expect((await stack.call('POST', `/api/v1/admin/orgs/${orgId}/suspend`, bearer(op))).status).toBe(200);
    const refused = await me(member);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toMatch(/organization is suspended/);
    expect((await stack.call('POST', `/api/v1/admin/orgs/${orgId}/reactivate`, bearer(op))).status).toBe(200);
    expect((await me(member)).status).toBe(200);
    const log = await stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, bearer(op));
    expect(log.status).toBe(200);
    const opId = personUserId(idp.issuer, 'op');
    expect(log.body.items.slice(0, 2).map((e: { action: string; actor: string }) => [e.action, e.actor])).toEqual([
      ['org_reactivated', `operator:${opId}`],
      ['org_suspended', `operator:${opId}`],
    ]);
  });
});

describe('API key expiry', () => {
  it('refuses an expired key at once, cached or not; refuses a past or far expiry with 422', async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    const made = await stack.call('POST', '/api/keys', { body: { name: 'short', expires_at: at } });
    expect(made.status).toBe(200);
    expect(made.body.expires_at).toBe(at);
    expect((await stack.call('GET', '/api/v1/users/me', { key: made.body.key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(at) - Date.now()) + 50));
    // A guess at the key (its id, another secret) is refused and records nothing.
    const guess = `acs_${made.body.id}_${'x'.repeat(43)}`;
    expect((await stack.call('GET', '/api/v1/users/me', { key: guess })).status).toBe(401);
    const expiries = async () =>
      ((await stack.call('GET', '/api/v1/audit-log?limit=100')).body.items as any[]).filter(
        (e) => e.action === 'key_expired' && e.target === made.body.id,
      );
    expect(await expiries()).toEqual([]);
    for (let i = 0; i < 3; i++)
      expect((await stack.call('GET', '/api/v1/users/me', { key: made.body.key })).status).toBe(401);
    // The holder's first use after the expiry records it once, dated when it expired.
    expect(await expiries()).toEqual([expect.objectContaining({ actor: 'system', at, target: made.body.id })]);
    for (const bad of [new Date(Date.now() - 1000).toISOString(), '2999-01-01T00:00:00Z', 'tomorrow']) {
      const res = await stack.call('POST', '/api/keys', { body: { name: 'bad', expires_at: bad } });
      expect(res.status, bad).toBe(422);
      expect(JSON.stringify(res.body), bad).toContain('expires_at');
    }
  });
});

describe('audit log', () => {
  it('records names, never values; owners and admins read it newest first and paged, members and strangers cannot', async () => {
    const owner = await access('auditor');
    const orgId = (await me(owner)).body.org_id;
    const secret = 'sk-audit-planted-0123456789';
    expect(
      (
        await stack.call('POST', '/api/settings', {
          ...bearer(owner),
          body: { llm_model: 'm', llm_api_key: secret, language: 'fr' },
        })
      ).status,
    ).toBe(200);
    await stack.call('POST', '/api/keys', { ...bearer(owner), body: { name: 'audited' } });
    const page1 = await stack.call('GET', '/api/v1/audit-log?limit=2', bearer(owner));
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((e: { action: string }) => e.action)).toEqual(['key_created', 'secret_set']);
    expect(page1.body.items[1].fields).toEqual(['llm_api_key']);
    const page2 = await stack.call(
      'GET',
      `/api/v1/audit-log?limit=2&page_id=${page1.body.next_page_id}`,
      bearer(owner),
    );
    expect(page2.body.items[0]).toMatchObject({ action: 'settings_saved', fields: ['language', 'llm_model'] });
    const all = await stack.call('GET', '/api/v1/audit-log?limit=100', bearer(owner));
    expect(all.text).not.toContain(secret);
    expect(all.body.items.at(-1).action).toBe('sign_up');
    // Another organization's log: not found; a stranger's cursor replayed: refused.
    const stranger = await access('stranger-auditor');
    expect((await stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, bearer(stranger))).status).toBe(404);
    expect(
      (await stack.call('GET', `/api/v1/audit-log?page_id=${page1.body.next_page_id}`, bearer(stranger))).status,
    ).toBe(400);
  });
});
