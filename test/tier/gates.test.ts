import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reply, startScriptedLlm, type ScriptedLlm } from '#test/helpers/scripted-llm.ts';
import { createKey, settingsRoundTrip, startConversationV1 } from '#test/tier/flows.ts';
import { startTier, type TierStack } from '#test/tier/stack.ts';

/**
 * The browser gates on the synthesized stack (test/integration/gates.test.ts has the full matrix on
 * the local stack): the session cookie through API Gateway's payload 2.0 `cookies` and the deployed
 * authorizer, a conversation-scoped key, and the keys API, each function with only its template's
 * environment and role.
 */
let tier: TierStack;
let llm: ScriptedLlm;
let key: string;

beforeAll(async () => {
  [tier, llm] = await Promise.all([startTier(), startScriptedLlm()]);
  key = await createKey(tier, 'carol');
}, 120_000);
afterAll(async () => {
  await tier?.stop();
  await llm?.close();
});

const cookieOf = (setCookie: string | null) => setCookie?.split(';')[0] ?? '';

describe('the gates, as deployed', () => {
  it('signs in with a cookie the authorizer reads, refuses it cross-site, and ends it at sign-out', async () => {
    const signIn = await tier.call('POST', '/api/authenticate', { key });
    expect(signIn.status, signIn.text).toBe(200);
    const setCookie = signIn.headers.get('set-cookie');
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    const cookie = cookieOf(setCookie);
    const sameSite = { cookie, 'sec-fetch-site': 'same-origin' };
    const me = await tier.call('GET', '/api/v1/users/me', { headers: sameSite });
    expect(me.status, me.text).toBe(200);
    expect(me.body.id).toBe('carol');
    // A write with the cookie from a foreign origin (the template allows only the tier's Canvas origin, test/fixtures/cors/tier.json).
    const evil = await tier.call('POST', '/api/settings', {
      headers: { cookie, origin: 'https://evil.example' },
      body: { max_iterations: 7 },
    });
    expect(evil.status).toBe(403);
    const out = await tier.call('POST', '/api/logout', {
      headers: { ...sameSite, origin: `https://${tier.front.domainName}` },
    });
    expect(out.status, out.text).toBe(200);
    expect((await tier.call('GET', '/api/v1/users/me', { headers: sameSite })).status).toBe(401);
    expect(tier.aws.denials).toEqual([]);
  });

  it("a conversation's scoped key opens that conversation's routes only, until it is revoked", async () => {
    await settingsRoundTrip(tier, key, llm.baseUrl);
    llm.enqueue(reply.finish('done'));
    const { conversationId } = await startConversationV1(tier, key, 'hello');
    const [conversation] = (await tier.call('GET', `/api/v1/app-conversations?ids=${conversationId}`, { key })).body;
    const scoped: string = conversation.session_api_key;
    expect(scoped).toMatch(/^acsc\./);
    const search = await tier.call('GET', `/api/v1/events/search?conversation_id__eq=${conversationId}`, {
      key: scoped,
    });
    expect(search.status, search.text).toBe(200);
    expect(search.body.items.length).toBeGreaterThan(0);
    // Its own conversation's view of the settings (Agent Canvas's local mode), never the owner's keys.
    expect((await tier.call('GET', '/api/settings', { key: scoped })).status).toBe(200);
    expect((await tier.call('GET', '/api/keys', { key: scoped })).status).toBe(403);
    const revoked = await tier.call('POST', `/api/v1/app-conversations/${conversationId}/session-api-key/revoke`, {
      key,
    });
    expect(revoked.status, revoked.text).toBeLessThan(300);
    expect(
      (await tier.call('GET', `/api/v1/events/search?conversation_id__eq=${conversationId}`, { key: scoped })).status,
    ).toBe(401);
    expect(tier.aws.denials).toEqual([]);
  }, 120_000);

  it('manages API keys over the API: created once, listed without the secret, revoked', async () => {
    const created = await tier.call('POST', '/api/keys', { key, body: { name: 'tier' } });
    expect(created.status, created.text).toBeLessThan(300);
    const newKey: string = created.body.key;
    expect((await tier.call('GET', '/api/v1/users/me', { key: newKey })).status).toBe(200);
    const listed = await tier.call('GET', '/api/keys', { key });
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(newKey);
    const id = newKey.split('_')[1]!;
    const deleted = await tier.call('DELETE', `/api/keys/${id}`, { key });
    expect(deleted.status).toBeLessThan(300);
    // The authorizer that just admitted it may hold its record for the documented time; one that never read it refuses at once.
    expect(deleted.body.effective_within_seconds).toBe(30);
    const unused = (await tier.call('POST', '/api/keys', { key, body: { name: 'never used' } })).body.key as string;
    expect((await tier.call('DELETE', `/api/keys/${unused.split('_')[1]}`, { key })).status).toBeLessThan(300);
    expect((await tier.call('GET', '/api/v1/users/me', { key: unused })).status).toBe(401);
    expect(tier.aws.denials).toEqual([]);
  });
  it("signs an invited person in through the console's exchange, then takes the user pool's access tokens in the deployed authorizer; ID tokens, other clients, foreign keys and the uninvited are refused", async () => {
    const idp = tier.cognito;
    const origin = `https://${tier.front.domainName}`;
    const bearer = (token: string) => ({ key: null, headers: { authorization: `Bearer ${token}` } });
    // Cognito's access tokens: token_use and client_id, no aud, no email.
    const access = (sub: string, extra: Record<string, unknown> = {}) =>
      idp.sign({ sub, token_use: 'access', client_id: idp.clientId, username: sub, ...extra });
    const orgId = (await tier.call('GET', '/api/v1/users/me', { key })).body.org_id;
    const invited = await tier.call('POST', `/api/v1/orgs/${orgId}/invitations`, {
      key,
      body: { email: 'dora@example.com' },
    });
    expect(invited.status, invited.text).toBe(200);
    // The console's sign-in (invite is the stack's default sign-up mode): start, then the ID token for a session.
    const start = await tier.call('POST', '/api/auth/oidc/start', { key: null });
    expect(start.status, start.text).toBe(200);
    expect(start.body).toMatchObject({ issuer: idp.issuer, client_id: idp.clientId });
    const idToken = await idp.sign({
      sub: 'pool-dora',
      token_use: 'id',
      aud: idp.clientId,
      email: 'dora@example.com',
      email_verified: true,
      nonce: start.body.nonce,
    });
    const session = await tier.call('POST', '/api/auth/oidc/session', {
      key: null,
      headers: { cookie: cookieOf(start.headers.get('set-cookie')), origin },
      body: { id_token: idToken },
    });
    expect(session.status, session.text).toBe(200);
    const me = await tier.call('GET', '/api/v1/users/me', bearer(await access('pool-dora')));
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ id: session.body.user_id, org_id: orgId, role: 'member' });
    const uninvited = await tier.call('GET', '/api/v1/users/me', bearer(await access('pool-eve')));
    expect(uninvited.status).toBe(401);
    expect(uninvited.body.detail).toMatch(/invitation/);
    for (const [what, refused] of [
      ['an ID token on an API route', idToken],
      ['another client', await access('pool-dora', { client_id: 'another-client' })],
      [
        'a key not in the JWKS',
        await idp.sign({ sub: 'pool-dora', token_use: 'access', client_id: idp.clientId }, { key: 'unknown' }),
      ],
      ['alg none', idp.unsigned({ sub: 'pool-dora', token_use: 'access', client_id: idp.clientId })],
    ] as const)
      expect((await tier.call('GET', '/api/v1/users/me', bearer(refused))).status, what).toBe(401);
    expect(tier.aws.denials).toEqual([]);
  });
});
