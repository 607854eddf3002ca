import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { personUserId } from '#shared/accounts/accounts.ts';
import {
  SIGN_IN_PER_ACCOUNT_PER_MINUTE,
  SIGN_IN_PER_IP_PER_MINUTE,
  SIGN_IN_PER_IP_REFUSAL,
} from '#shared/auth/rate-limit.ts';
import { DynamoConversationStore } from '#shared/conversations/dynamo-conversation-store.ts';
import { DynamoEventStore } from '#shared/events/dynamo-event-store.ts';
import { DynamoAccountStore } from '#shared/accounts/dynamo-account-store.ts';
import { DynamoSandboxStore } from '#shared/sandboxes/dynamo-sandbox-store.ts';
import { DynamoUsageStore } from '#shared/usage/dynamo-usage-store.ts';
import { DynamoSettingsStore } from '#shared/settings/dynamo-settings-store.ts';
import type { AgentEventEnvelope } from '#shared/protocol.ts';
import { storedConversation, storedSandbox } from '#test/helpers/conversations.ts';
import { requestFrom } from '#test/helpers/request-from.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';
import { getSandbox, sandboxPids, waitForSandboxStatus } from '#test/helpers/sandboxes.ts';
import { eventsUrl, openStream } from '#test/helpers/stream-client.ts';
import { waitFor } from '#test/helpers/wait.ts';
import { REFUSALS } from '#shared/stream/access.ts';
import { CLOSE } from '#shared/stream/messages.ts';
import { startTestIssuer, type TestIssuer } from '#test/helpers/oidc-issuer.ts';
import { expectRetryAfterInWindow, limiterMinute } from '#test/helpers/limiter-window.ts';

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

/** An HTTP request to the stack from `address` (any of 127.0.0.0/8): a client address of its own, as the sign-in limits count them. */
const callFrom = (
  address: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
) => requestFrom(stack.url, address, method, path, headers, body);
/**
 * The console's sign-in from `address`: start (the nonce cookie), then the exchange of an ID token of
 * the test issuer for `sub`, carrying that nonce, with the stack's own Origin. The answer and the ID token.
 */
async function exchangeFrom(address: string, sub: string) {
  const start = await callFrom(address, 'POST', '/api/auth/oidc/start', { origin: stack.url });
  expect(start.status, start.text).toBe(200);
  const cookie = String((start.headers['set-cookie'] as string[])[0]).split(';')[0]!;
  const idToken = await idp.sign({
    sub,
    aud: CLIENT,
    nonce: start.body.nonce,
    email: `${sub}@example.com`,
    email_verified: true,
  });
  const res = await callFrom(
    address,
    'POST',
    '/api/auth/oidc/session',
    { origin: stack.url, cookie },
    {
      id_token: idToken,
    },
  );
  return { ...res, idToken };
}
/** An organization's audit entries of `action`, as an operator reads them. */
async function auditEntries(orgId: string, action: string) {
  const op = await access('op', { email: 'op@example.com' });
  const log = await stack.call('GET', `/api/v1/audit-log?org_id=${orgId}&limit=100`, bearer(op));
  expect(log.status, log.text).toBe(200);
  return { items: (log.body.items as { action: string }[]).filter((e) => e.action === action), text: log.text };
}

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
    // The invitee sees what accepting would do; someone else's email is refused and told nothing of the
    // organization; a forged token is a 404, a malformed one a 422 naming the field.
    const look = (token: string, as: string) => stack.call('GET', `/api/v1/invitations/${token}`, bearer(as));
    expect((await look(forAdam.body.token, adam)).body).toEqual({
      org_id: orgId,
      org_name: 'Personal',
      role: 'admin',
      email: 'adam@example.com',
      expires_at: forAdam.body.expires_at,
      already_member: false,
    });
    const wrongPerson = await look(forAdam.body.token, mia);
    expect(wrongPerson.status).toBe(403);
    expect(wrongPerson.text).not.toContain(orgId);
    expect((await look(`acsi_${'A'.repeat(43)}`, mia)).status).toBe(404);
    const malformed = await look('acsi_short', mia);
    expect([malformed.status, malformed.text]).toEqual([422, expect.stringContaining('token')]);
    // Already in it: said, so the page does not offer a move that would be refused (409).
    const forOlga = await invite('olga@example.com', 'member');
    expect((await look(forOlga.body.token, olga)).body).toMatchObject({ org_id: orgId, already_member: true });
    expect((await stack.call('POST', `/api/v1/invitations/${forOlga.body.token}/accept`, bearer(olga))).status).toBe(
      409,
    );
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
    // Single use: spent, it is neither accepted nor shown again.
    expect((await stack.call('POST', `/api/v1/invitations/${forMia.body.token}/accept`, bearer(mia))).status).toBe(404);
    expect((await look(forMia.body.token, mia)).status).toBe(404);
    expect((await me(mia)).body).toMatchObject({ org_id: orgId, role: 'member' });
    // A sandbox of Mia's, started now in her new organization: running by the time she is removed.
    const miaBox = await stack.call('POST', '/api/v1/sandboxes', bearer(mia));
    expect(miaBox.status, miaBox.text).toBe(200);
    expect(miaBox.body.status).toBe('STARTING');
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
    const sandboxes = new DynamoSandboxStore();
    await waitFor("Mia's sandbox running", () => sandboxes.get(miaBox.body.id), {
      until: (r) => r?.status === 'RUNNING',
      timeoutMs: 60_000,
    });
    const removed = await stack.call('DELETE', `/api/v1/orgs/${orgId}/members/${miaId}`, bearer(owner));
    expect(removed.status).toBe(200);
    // Her running sandbox paused (workspace kept), its process gone.
    expect(await sandboxes.get(miaBox.body.id)).toMatchObject({
      status: 'PAUSED',
      detail: 'Paused: its owner left the organization',
    });
    expect(sandboxPids(miaBox.body.id)).toEqual([]);
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

describe('a move between organizations', () => {
  it("pauses the mover's running sandbox: usage up to the move is the old organization's, a resume bills the new one", async () => {
    const mover = await access('mover');
    const oldOrg = (await me(mover)).body.org_id as string;
    const host = await access('host');
    const newOrg = (await me(host)).body.org_id as string;
    const sandboxes = new DynamoSandboxStore();
    const usage = new DynamoUsageStore();
    /** Waits until the sandbox has run a whole second in its generation (the least a record bills). */
    const runningASecond = async (id: string) => {
      const rec = await waitFor('the sandbox running', () => sandboxes.get(id), {
        until: (r) => r?.status === 'RUNNING',
        timeoutMs: 60_000,
      });
      await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(rec.runningAt!) + 1100 - Date.now())));
      return rec;
    };
    const started = await stack.call('POST', '/api/v1/sandboxes', bearer(mover));
    expect(started.status, started.text).toBe(200);
    const id = started.body.id as string;
    const inv = await stack.call('POST', `/api/v1/orgs/${newOrg}/invitations`, {
      ...bearer(host),
      body: { email: 'mover@example.com', role: 'member' },
    });
    expect((await runningASecond(id)).orgId).toBe(oldOrg);
    expect((await stack.call('POST', `/api/v1/invitations/${inv.body.token}/accept`, bearer(mover))).status).toBe(200);
    expect(await sandboxes.get(id)).toMatchObject({
      status: 'PAUSED',
      detail: 'Paused: its owner moved to another organization',
    });
    expect(sandboxPids(id)).toEqual([]);
    // Up to the move: the old organization's, closed at the pause.
    const before = await usage.computeRecords(id, 1);
    expect(before.length).toBeGreaterThanOrEqual(1);
    expect(before.every((r) => r.orgId === oldOrg)).toBe(true);
    expect(before.reduce((n, r) => n + r.seconds, 0)).toBeGreaterThanOrEqual(1);
    // Resumed: under the new organization, and billed to it.
    expect((await stack.call('POST', `/api/v1/sandboxes/${id}/resume`, bearer(mover))).status).toBe(200);
    const resumed = await runningASecond(id);
    expect(resumed).toMatchObject({ orgId: newOrg, generation: 2 });
    expect((await stack.call('POST', `/api/v1/sandboxes/${id}/pause`, bearer(mover))).status).toBe(200);
    const after = await usage.computeRecords(id, 2);
    expect(after.length).toBeGreaterThanOrEqual(1);
    expect(after.every((r) => r.orgId === newOrg)).toBe(true);
    // Nothing of the first generation was written after the move.
    expect(await usage.computeRecords(id, 1)).toEqual(before);
  }, 90_000);
});

describe('operators', () => {
  it('suspend and reactivate a user: keys, tokens, cookies and conversation keys refused at once, the open stream closed, the running sandbox paused with its workspace kept; non-operators refused', async () => {
    const op = await access('op', { email: 'op@example.com' });
    const victimToken = await access('suspect');
    const victimId = (await me(victimToken)).body.id;
    const key = (await stack.call('POST', '/api/keys', { ...bearer(victimToken), body: { name: 'k' } })).body.key;
    // Their live work: a sandbox starting (it runs by the time it is needed), a session cookie, a conversation's key and its open stream.
    const started = await stack.call('POST', '/api/v1/sandboxes', { key });
    expect(started.status, started.text).toBe(200);
    const sandboxId = started.body.id as string;
    const cookie = (await stack.call('POST', '/api/authenticate', { key })).headers.get('set-cookie')!.split(';')[0]!;
    const withCookie = { key: null, headers: { cookie, 'sec-fetch-site': 'same-origin' } };
    const cid = await storedConversation(victimId, { title: 'suspect' });
    const scoped = (await stack.call('GET', `/api/v1/app-conversations?ids=${cid}`, { key })).body[0]
      .session_api_key as string;
    expect(scoped).toMatch(/^acsc\./);
    const byScoped = () => stack.call('GET', `/api/v1/events/search?conversation_id__eq=${cid}`, { key: scoped });
    expect((await byScoped()).status).toBe(200);
    expect((await stack.call('GET', '/api/v1/users/me', withCookie)).status).toBe(200);
    const stream = openStream(eventsUrl(stack.url, cid, { session_api_key: scoped }));
    await stream.opened;
    await waitForSandboxStatus(stack, sandboxId, 'RUNNING', key, 60_000);
    const workspace = join(stack.dataDir, 'sandboxes', sandboxId, 'workspace');
    writeFileSync(join(workspace, 'kept.txt'), 'work in progress');
    // Not an operator: an unverified operator email does not count either.
    const fake = await access('fake-op', { email: 'op@example.com', email_verified: false });
    expect((await stack.call('POST', `/api/v1/admin/users/${victimId}/suspend`, bearer(fake))).status).toBe(403);
    expect((await stack.call('POST', `/api/v1/admin/users/${victimId}/suspend`, bearer(victimToken))).status).toBe(403);
    const s = await stack.call('POST', `/api/v1/admin/users/${victimId}/suspend`, bearer(op));
    expect(s.status).toBe(200);
    expect(s.body.paused_sandbox_ids).toEqual([sandboxId]);
    // The stream is closed by the suspension itself (not at a later ping).
    expect(await stream.closed).toEqual({ code: CLOSE.unauthorized, reason: REFUSALS.revoked });
    for (const res of [
      await me(victimToken),
      await stack.call('GET', '/api/v1/users/me', { key }),
      await stack.call('GET', '/api/v1/users/me', withCookie),
      await byScoped(),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body.detail).toBe('This account is suspended');
    }
    // A new stream is refused too.
    expect((await openStream(eventsUrl(stack.url, cid, { session_api_key: scoped })).closed).code).toBe(
      CLOSE.unauthorized,
    );
    // Paused, its process gone, its workspace kept.
    expect(await new DynamoSandboxStore().get(sandboxId)).toMatchObject({
      status: 'PAUSED',
      detail: 'Paused: the account is suspended',
    });
    expect(sandboxPids(sandboxId)).toEqual([]);
    expect(readFileSync(join(workspace, 'kept.txt'), 'utf8')).toBe('work in progress');
    expect((await stack.call('POST', `/api/v1/admin/users/${victimId}/reactivate`, bearer(op))).status).toBe(200);
    expect((await stack.call('GET', '/api/v1/users/me', { key })).status).toBe(200);
    expect((await byScoped()).status).toBe(200);
    // Reactivation resumes nothing by itself: the sandbox waits, paused, for its owner.
    expect((await getSandbox(stack, sandboxId, key))!.status).toBe('PAUSED');
  }, 90_000);

  it('suspends an organization: every member refused; the audit log names the operator', async () => {
    const op = await access('op', { email: 'op@example.com' });
    const member = await access('orgmember');
    const orgId = (await me(member)).body.org_id;
    expect((await stack.call('POST', `/api/v1/admin/orgs/${orgId}/suspend`, bearer(op))).status).toBe(200);
    const refused = await me(member);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toMatch(/organization is suspended/);
    // The console's sign-in too: refused, and written to the organization's log.
    const signIn = await exchangeFrom('127.0.0.1', 'orgmember');
    expect(signIn.status).toBe(401);
    expect(signIn.body.detail).toMatch(/organization is suspended/);
    expect((await stack.call('POST', `/api/v1/admin/orgs/${orgId}/reactivate`, bearer(op))).status).toBe(200);
    expect((await me(member)).status).toBe(200);
    const log = await stack.call('GET', `/api/v1/audit-log?org_id=${orgId}`, bearer(op));
    expect(log.status).toBe(200);
    const opId = personUserId(idp.issuer, 'op');
    const memberId = personUserId(idp.issuer, 'orgmember');
    expect(
      log.body.items
        .slice(0, 3)
        .map((e: { action: string; actor: string; detail: string | null }) => [e.action, e.actor, e.detail]),
    ).toEqual([
      ['org_reactivated', `operator:${opId}`, null],
      ['sign_in_refused', memberId, 'organization suspended'],
      ['org_suspended', `operator:${opId}`, null],
    ]);
  });
});

describe('refused sign-ins in the audit log', () => {
  it("a known person's refused sign-in is written to their organization, at most once a minute, with the reason and never the token", async () => {
    const signedIn = await exchangeFrom('127.0.0.1', 'refusee');
    expect(signedIn.status, signedIn.text).toBe(200);
    const userId = signedIn.body.user_id as string;
    const orgId = (await me(await access('refusee'))).body.org_id as string;
    const op = await access('op', { email: 'op@example.com' });
    expect((await stack.call('POST', `/api/v1/admin/users/${userId}/suspend`, bearer(op))).status).toBe(200);
    const window = limiterMinute();
    const refused = [await exchangeFrom('127.0.0.1', 'refusee'), await exchangeFrom('127.0.0.1', 'refusee')];
    for (const res of refused) {
      expect(res.status).toBe(401);
      expect(res.body.detail).toBe('This account is suspended');
    }
    const { items, text } = await auditEntries(orgId, 'sign_in_refused');
    // Two refusals in one minute: one entry (two only if the minute turned between them).
    expect(items).toHaveLength(limiterMinute() === window ? 1 : 2);
    expect(items[0]).toMatchObject({ actor: userId, target: userId, detail: 'account suspended' });
    for (const res of refused) expect(text).not.toContain(res.idToken.split('.')[1]);
    // Reactivated: signs in again.
    expect((await stack.call('POST', `/api/v1/admin/users/${userId}/reactivate`, bearer(op))).status).toBe(200);
    expect((await exchangeFrom('127.0.0.1', 'refusee')).status).toBe(200);
  });
});

describe('sign-in rate limits', () => {
  it(`holds one account to ${SIGN_IN_PER_ACCOUNT_PER_MINUTE} sign-ins a minute whatever the address (429 with Retry-After); the refusal audited once`, async () => {
    // Within one limiter window: should the minute turn during a run, it is run again with another person.
    for (let attempt = 0; attempt < 2; attempt++) {
      const sub = `busy-${attempt}`;
      const window = limiterMinute();
      const since = Date.now();
      const answers = [];
      // Each from an address of its own: the per-address limit never meets them.
      for (let i = 0; i < SIGN_IN_PER_ACCOUNT_PER_MINUTE + 2; i++)
        answers.push(await exchangeFrom(`127.0.0.${20 + 2 * attempt * SIGN_IN_PER_ACCOUNT_PER_MINUTE + i}`, sub));
      if (limiterMinute() !== window) continue;
      expect(answers.slice(0, SIGN_IN_PER_ACCOUNT_PER_MINUTE).map((r) => r.status)).toEqual(
        Array(SIGN_IN_PER_ACCOUNT_PER_MINUTE).fill(200),
      );
      for (const res of answers.slice(SIGN_IN_PER_ACCOUNT_PER_MINUTE)) {
        expect(res.status).toBe(429);
        expectRetryAfterInWindow(res.headers['retry-after'], since);
        expect(res.body.detail).toMatch(/Too many sign-ins for this account/);
        expect(res.headers['set-cookie'] ?? []).not.toEqual(
          expect.arrayContaining([expect.stringMatching(/acs_session/)]),
        );
      }
      // Another person from the last address still signs in.
      expect(
        (await exchangeFrom(`127.0.0.${20 + 2 * attempt * SIGN_IN_PER_ACCOUNT_PER_MINUTE}`, `calm-${attempt}`)).status,
      ).toBe(200);
      const orgId = (await me(await access(sub))).body.org_id as string;
      const { items } = await auditEntries(orgId, 'sign_in_refused');
      expect(items).toEqual([expect.objectContaining({ detail: 'too many sign-ins for this account' })]);
      return;
    }
    throw new Error('The minute turned during both runs');
  });
});

describe('operators list users and organizations', () => {
  it('through an index, paged, filtered; never to an owner, an admin or a member; no secrets; audited', async () => {
    const op = await access('op', { email: 'op@example.com' });
    const opOrg = (await me(op)).body.org_id;
    // An organization with an owner, an admin and a member: each hostile to the operators' lists.
    const owner = await access('lister-owner');
    const orgId = (await me(owner)).body.org_id;
    const join = async (sub: string, role: string) => {
      const inv = await stack.call('POST', `/api/v1/orgs/${orgId}/invitations`, {
        ...bearer(owner),
        body: { email: `${sub}@example.com`, role },
      });
      const token = await access(sub);
      expect((await stack.call('POST', `/api/v1/invitations/${inv.body.token}/accept`, bearer(token))).status).toBe(
        200,
      );
      return token;
    };
    const admin = await join('lister-admin', 'admin');
    const member = await join('lister-member', 'member');
    const key = (await stack.call('POST', '/api/keys', { ...bearer(member), body: { name: 'k' } })).body.key as string;
    await stack.call('POST', '/api/settings', {
      ...bearer(member),
      body: { llm_model: 'm', llm_api_key: 'sk-lister-planted-0123456789' },
    });
    for (const who of [owner, admin, member]) {
      for (const path of [
        '/api/v1/admin/users',
        `/api/v1/admin/users?org_id=${orgId}`,
        '/api/v1/admin/users?status=suspended',
        '/api/v1/admin/orgs',
      ]) {
        const res = await stack.call('GET', path, bearer(who));
        expect(res.status, path).toBe(403);
        expect(res.text).not.toContain('lister-');
      }
    }
    expect((await stack.call('GET', '/api/v1/admin/users', { key })).status).toBe(403);
    // An unverified operator email is no operator.
    const fake = await access('fake-lister', { email: 'op@example.com', email_verified: false });
    expect((await stack.call('GET', '/api/v1/admin/orgs', bearer(fake))).status).toBe(403);

    // One organization's members, by user id; nothing of keys or settings.
    const inOrg = await stack.call('GET', `/api/v1/admin/users?org_id=${orgId}`, bearer(op));
    expect(inOrg.status).toBe(200);
    const ids = ['lister-owner', 'lister-admin', 'lister-member'].map((s) => personUserId(idp.issuer, s)).sort();
    expect(inOrg.body.items.map((u: { user_id: string }) => u.user_id)).toEqual(ids);
    expect(inOrg.body.items.find((u: { role: string }) => u.role === 'admin')).toMatchObject({
      email: 'lister-admin@example.com',
      email_verified: true,
      org_id: orgId,
      status: 'active',
    });
    for (const secret of [key, key.slice(key.indexOf('_', 4) + 1), 'sk-lister-planted', 'hash', 'sealed'])
      expect(inOrg.text).not.toContain(secret);

    // Everyone, newest first, paged: the fake operator signed up last.
    const first = await stack.call('GET', '/api/v1/admin/users?limit=2', bearer(op));
    expect(first.body.items.length).toBe(2);
    expect(first.body.items[0].user_id).toBe(personUserId(idp.issuer, 'fake-lister'));
    const listed: { user_id: string; created_at: string }[] = [];
    let page = first;
    for (let i = 0; i < 100 && page.body.next_page_id; i++) {
      listed.push(...page.body.items);
      page = await stack.call('GET', `/api/v1/admin/users?limit=7&page_id=${page.body.next_page_id}`, bearer(op));
      expect(page.status).toBe(200);
    }
    listed.push(...page.body.items);
    const seen = listed.map((u) => u.user_id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining([...ids, personUserId(idp.issuer, 'op')]));
    const times = listed.map((u) => u.created_at);
    expect(times).toEqual([...times].sort().reverse());
    // A cursor replayed under other filters, or by a non-operator: refused.
    const cursor = first.body.next_page_id;
    expect((await stack.call('GET', `/api/v1/admin/users?status=active&page_id=${cursor}`, bearer(op))).status).toBe(
      400,
    );
    expect((await stack.call('GET', `/api/v1/admin/users?page_id=${cursor}`, bearer(admin))).status).toBe(403);
    expect((await stack.call('GET', `/api/v1/admin/orgs?page_id=${cursor}`, bearer(op))).status).toBe(400);
    // Bad filters name their field.
    const bad = await stack.call('GET', '/api/v1/admin/users?status=gone', bearer(op));
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toContain('status');
    expect((await stack.call('GET', '/api/v1/admin/users?org_id=nope', bearer(op))).status).toBe(422);

    // Suspended people and organizations: in the sparse index while suspended, out of it once reactivated.
    const memberId = personUserId(idp.issuer, 'lister-member');
    const suspendedIds = async () =>
      (await stack.call('GET', '/api/v1/admin/users?status=suspended', bearer(op))).body.items.map(
        (u: { user_id: string }) => u.user_id,
      );
    expect(await suspendedIds()).not.toContain(memberId);
    expect((await stack.call('POST', `/api/v1/admin/users/${memberId}/suspend`, bearer(op))).status).toBe(200);
    expect(await suspendedIds()).toContain(memberId);
    const activeInOrg = await stack.call('GET', `/api/v1/admin/users?org_id=${orgId}&status=active`, bearer(op));
    expect(activeInOrg.body.items.map((u: { user_id: string }) => u.user_id)).not.toContain(memberId);
    expect(activeInOrg.body.items.length).toBe(2);
    expect((await stack.call('POST', `/api/v1/admin/users/${memberId}/reactivate`, bearer(op))).status).toBe(200);
    expect(await suspendedIds()).not.toContain(memberId);

    const suspendedOrgs = async () =>
      (await stack.call('GET', '/api/v1/admin/orgs?status=suspended', bearer(op))).body.items.map(
        (o: { id: string }) => o.id,
      );
    expect((await stack.call('POST', `/api/v1/admin/orgs/${orgId}/suspend`, bearer(op))).status).toBe(200);
    expect(await suspendedOrgs()).toContain(orgId);
    expect((await stack.call('POST', `/api/v1/admin/orgs/${orgId}/reactivate`, bearer(op))).status).toBe(200);
    expect(await suspendedOrgs()).not.toContain(orgId);
    const orgs = await stack.call('GET', '/api/v1/admin/orgs?limit=100', bearer(op));
    expect(orgs.status).toBe(200);
    expect(orgs.body.items.find((o: { id: string }) => o.id === orgId)).toMatchObject({
      status: 'active',
      owners: 1,
      is_personal: true,
    });
    // Newest first: the lister-owner's organization is newer than the operator's own.
    const order = orgs.body.items.map((o: { id: string }) => o.id);
    expect(order.indexOf(orgId)).toBeLessThan(order.indexOf(opOrg));
    // The personal organizations the admin and member left are closed, and listed as such.
    const closed = await stack.call('GET', '/api/v1/admin/orgs?status=closed', bearer(op));
    expect(closed.body.items.length).toBeGreaterThanOrEqual(2);
    expect(closed.body.items.every((o: { status: string }) => o.status === 'closed')).toBe(true);

    // Audited, naming the operator: an organization's listing in its own log, the rest in the operator's.
    const opId = personUserId(idp.issuer, 'op');
    const theirs = await stack.call('GET', `/api/v1/audit-log?org_id=${orgId}&limit=100`, bearer(op));
    expect(theirs.body.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'users_listed', actor: `operator:${opId}`, target: orgId }),
      ]),
    );
    const mine = await stack.call('GET', '/api/v1/audit-log?limit=100', bearer(op));
    const actions = mine.body.items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['users_listed', 'orgs_listed']));
    expect(mine.body.items.find((e: { detail: string | null }) => e.detail === 'status=suspended')).toBeDefined();
  }, 60_000);
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

/** A conversation of `userId` with `n` events, written through the stores as the start and the sandbox's posts leave them. */
async function conversationWithEvents(userId: string, n: number, title: string): Promise<string> {
  const id = await storedConversation(userId, { title });
  const at = new Date().toISOString();
  const store = new DynamoEventStore();
  const batches = [];
  for (let first = 1; first <= n; first += 100) {
    const events = Array.from({ length: Math.min(100, n - first + 1) }, (_, i) => ({
      kind: 'MessageEvent',
      id: `${title}-${first + i}`,
      timestamp: at,
      source: 'agent',
      llm_message: { role: 'assistant', content: [{ type: 'text', text: `${title} ${first + i}` }] },
    })) as unknown as AgentEventEnvelope[];
    batches.push(store.append({ userId, conversationId: id }, first, events));
  }
  await Promise.all(batches);
  return id;
}

describe('a person exports their data', () => {
  it("paged: account, settings without secret values, keys without hashes, conversations with every event; nobody else's", async () => {
    const token = await access('exporter');
    const userId = (await me(token)).body.id as string;
    const secret = 'sk-export-planted-0123456789';
    await stack.call('POST', '/api/settings', { ...bearer(token), body: { llm_model: 'm', llm_api_key: secret } });
    const key = (await stack.call('POST', '/api/keys', { ...bearer(token), body: { name: 'export-key' } })).body;
    const neighbour = await access('export-neighbour');
    const neighbourId = (await me(neighbour)).body.id as string;
    const older = await conversationWithEvents(userId, 520, 'older');
    const newer = await conversationWithEvents(userId, 3, 'newer');
    await conversationWithEvents(neighbourId, 2, 'theirs');

    const pages = [];
    let page = await stack.call('GET', '/api/v1/users/me/export', bearer(token));
    for (let i = 0; i < 10; i++) {
      expect(page.status, page.text).toBe(200);
      pages.push(page);
      if (!page.body.next_page_id) break;
      page = await stack.call('GET', `/api/v1/users/me/export?page_id=${page.body.next_page_id}`, bearer(token));
    }
    const [first] = pages;
    expect(first!.body.account).toMatchObject({ user_id: userId, email: 'exporter@example.com', role: 'owner' });
    expect(first!.body.settings).toMatchObject({ llm_model: 'm', llm_api_key: null, llm_api_key_set: true });
    expect(first!.body.api_keys.map((k: { id: string }) => k.id)).toContain(key.id);
    for (const p of pages) {
      for (const leak of [secret, key.key, 'theirs', 'hash', 'sealed']) expect(p.text).not.toContain(leak);
      const events = p.body.conversations.reduce((a: number, c: { events: unknown[] }) => a + c.events.length, 0);
      expect(events).toBeLessThanOrEqual(500);
    }
    expect(pages.slice(1).every((p) => p.body.account === null && p.body.api_keys === null)).toBe(true);
    expect(pages.length).toBeGreaterThanOrEqual(2);
    // Newest first, each conversation's events whole and in order across pages.
    const byId = new Map<string, string[]>();
    const order: string[] = [];
    for (const p of pages)
      for (const c of p.body.conversations) {
        if (!byId.has(c.id)) order.push(c.id);
        byId.set(c.id, [...(byId.get(c.id) ?? []), ...c.events.map((e: { id: string }) => e.id)]);
      }
    expect(order).toEqual([newer, older]);
    expect(byId.get(newer)).toEqual(['newer-1', 'newer-2', 'newer-3']);
    expect(byId.get(older)).toEqual(Array.from({ length: 520 }, (_, i) => `older-${i + 1}`));

    // The cursor is the caller's alone; a conversation key exports nothing.
    const cursor = pages[0]!.body.next_page_id;
    expect((await stack.call('GET', `/api/v1/users/me/export?page_id=${cursor}`, bearer(neighbour))).status).toBe(400);
    const scoped = (await stack.call('GET', `/api/v1/app-conversations?ids=${newer}`, bearer(token))).body[0]
      ?.session_api_key as string;
    expect(scoped).toMatch(/^acsc\./);
    expect((await stack.call('GET', '/api/v1/users/me/export', { key: scoped })).status).toBe(403);
    const theirs = await stack.call('GET', '/api/v1/users/me/export', bearer(neighbour));
    expect(theirs.body.conversations.map((c: { title: string }) => c.title)).toEqual(['theirs']);
  }, 60_000);
});

describe('a person deletes their account', () => {
  it("refused at once, data removed by the scheduled purge in bounded runs; nobody else's touched; the last owner stays", async () => {
    const token = await access('leaver');
    const userId = (await me(token)).body.id as string;
    const orgId = (await me(token)).body.org_id as string;
    const secret = 'sk-leaver-planted-0123456789';
    await stack.call('POST', '/api/settings', { ...bearer(token), body: { llm_model: 'm', llm_api_key: secret } });
    const key = (await stack.call('POST', '/api/keys', { ...bearer(token), body: { name: 'leaver-key' } })).body.key;
    const cookie = (await stack.call('POST', '/api/authenticate', { key })).headers.get('set-cookie')!.split(';')[0]!;
    const withCookie = { key: null, headers: { cookie, 'sec-fetch-site': 'same-origin' } };
    const conv = await conversationWithEvents(userId, 120, 'leaving');
    const scoped = (await stack.call('GET', `/api/v1/app-conversations?ids=${conv}`, bearer(token))).body[0]
      .session_api_key as string;
    // A sandbox of theirs, as its program holds it: its own key.
    const { id: sandboxId, key: sandboxKeyValue } = await storedSandbox(userId, { status: 'PAUSED' });
    // A neighbour whose data must stay.
    const stayer = await access('stayer');
    const stayerId = (await me(stayer)).body.id as string;
    await stack.call('POST', '/api/settings', { ...bearer(stayer), body: { llm_model: 'kept' } });
    const stayerConv = await conversationWithEvents(stayerId, 5, 'staying');
    const confirm = { confirm: userId };

    // Hostile: the conversation's key and the sandbox's key cannot delete their owner; a wrong or missing confirmation is a 422.
    expect((await stack.call('DELETE', '/api/v1/users/me', { key: scoped, body: confirm })).status).toBe(403);
    expect((await stack.call('DELETE', '/api/v1/users/me', { key: sandboxKeyValue, body: confirm })).status).toBe(401);
    expect(
      (
        await stack.call('DELETE', '/api/v1/users/me', {
          key: null,
          headers: { 'x-session-api-key': sandboxKeyValue },
          body: confirm,
        })
      ).status,
    ).toBe(401);
    for (const body of [{ confirm: stayerId }, {}, { confirm: userId, extra: 1 }]) {
      const res = await stack.call('DELETE', '/api/v1/users/me', { ...bearer(token), body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    const wrong = await stack.call('DELETE', '/api/v1/users/me', { ...bearer(token), body: { confirm: stayerId } });
    expect(JSON.stringify(wrong.body)).toContain('confirm');
    // Another person's confirmation from the neighbour deletes only the neighbour's own... which it refuses (not their id).
    expect((await stack.call('DELETE', '/api/v1/users/me', { ...bearer(stayer), body: confirm })).status).toBe(422);
    expect((await me(token)).status).toBe(200);

    const res = await stack.call('DELETE', '/api/v1/users/me', { ...bearer(token), body: confirm });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ success: true, user_id: userId, status: 'deleting', deleted_sandbox_ids: [sandboxId] });
    // Refused at once: token, key, cookie, conversation key.
    const refusedToken = await me(token);
    expect(refusedToken.status).toBe(401);
    expect(refusedToken.body.detail).toBe('This account was deleted');
    expect((await stack.call('GET', '/api/v1/users/me', { key })).status).toBe(401);
    expect((await stack.call('GET', '/api/v1/users/me', withCookie)).status).toBe(401);
    expect((await stack.call('GET', `/api/v1/events/search?conversation_id__eq=${conv}`, { key: scoped })).status).toBe(
      401,
    );
    // Deleted: the record gone, or marked deleted while its task stops.
    const box = await new DynamoSandboxStore().get(sandboxId);
    expect(box === undefined || box.deletedAt !== undefined).toBe(true);

    // The scheduled purge (the daily reconcile's function) removes the data, a bounded amount a run.
    const events = new DynamoEventStore();
    let runs = 0;
    for (; runs < 20; runs++) {
      const swept = await stack.services.accountPurge.sweep(50);
      expect(swept.items).toBeLessThanOrEqual(50);
      if (swept.purged) break;
    }
    expect(runs).toBeGreaterThanOrEqual(2);
    expect((await events.query({ userId, conversationId: conv }, { descending: false, limit: 10 })).items).toEqual([]);
    expect(await new DynamoConversationStore().get(userId, conv)).toBeUndefined();
    expect(await new DynamoSettingsStore().get(userId)).toBeUndefined();
    const tombstone = await new DynamoAccountStore().getUser(userId);
    expect(tombstone).toMatchObject({ status: 'deleted', userId });
    expect(tombstone?.email).toBeUndefined();
    expect(tombstone?.purgedAt).toBeDefined();
    expect((await stack.services.accountPurge.sweep(50)).items).toBe(0);
    // Still refused after the purge; the identity's id stays taken.
    expect((await me(token)).body.detail).toBe('This account was deleted');

    // The neighbour's data is whole.
    expect((await stack.call('GET', '/api/settings', bearer(stayer))).body.llm_model).toBe('kept');
    expect(
      (await events.query({ userId: stayerId, conversationId: stayerConv }, { descending: false, limit: 10 })).items
        .length,
    ).toBe(5);

    // Kept: the audit entry, in the organization's log (read by an operator: the organization closed with its only member).
    const op = await access('op', { email: 'op@example.com' });
    const log = await stack.call('GET', `/api/v1/audit-log?org_id=${orgId}&limit=100`, bearer(op));
    expect(log.body.items.map((e: { action: string }) => e.action)).toContain('account_deleted');
    expect(log.text).not.toContain(secret);
    const listed = await stack.call('GET', '/api/v1/admin/users?status=deleted&limit=100', bearer(op));
    expect(listed.body.items.find((u: { user_id: string }) => u.user_id === userId)).toMatchObject({ email: null });
  }, 60_000);

  it('the last owner of an organization with other members is refused with 409; a member leaves and is out of its list', async () => {
    const boss = await access('last-boss');
    const orgId = (await me(boss)).body.org_id as string;
    const inv = await stack.call('POST', `/api/v1/orgs/${orgId}/invitations`, {
      ...bearer(boss),
      body: { email: 'worker@example.com', role: 'member' },
    });
    const worker = await access('worker');
    expect((await stack.call('POST', `/api/v1/invitations/${inv.body.token}/accept`, bearer(worker))).status).toBe(200);
    const bossId = (await me(boss)).body.id as string;
    const workerId = (await me(worker)).body.id as string;
    const refused = await stack.call('DELETE', '/api/v1/users/me', { ...bearer(boss), body: { confirm: bossId } });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/last owner/);
    expect((await me(boss)).status).toBe(200);
    expect(
      (await stack.call('DELETE', '/api/v1/users/me', { ...bearer(worker), body: { confirm: workerId } })).status,
    ).toBe(202);
    const org = await stack.call('GET', `/api/v1/orgs/${orgId}`, bearer(boss));
    expect(org.body.members.map((m: { user_id: string }) => m.user_id)).toEqual([bossId]);
    // Now alone, the owner may go: the organization closes.
    expect(
      (await stack.call('DELETE', '/api/v1/users/me', { ...bearer(boss), body: { confirm: bossId } })).status,
    ).toBe(202);
  });
});

describe('POST /api/authenticate per address (anyone may try keys there)', () => {
  it(`counts every attempt of an address before any key is read, refused ones too: past ${SIGN_IN_PER_IP_PER_MINUTE} a minute 429 with Retry-After, even with a good key; another address, and the address's other routes, go on`, async () => {
    const key = await stack.newUser('key-signer');
    const wrong = `acs_0000000000000000_${'A'.repeat(43)}`;
    // Within one limiter window (fixed minutes): should the minute turn during a run, it is run again in the new one.
    for (let run = 0; run < 2; run++) {
      const began = limiterMinute();
      const since = Date.now();
      const from = `127.0.0.${60 + run}`;
      const attempt = (headers: Record<string, string>) => callFrom(from, 'POST', '/api/authenticate', headers);
      const refused: number[] = [];
      // A wrong key or none, each claiming another viewer address (the local gateway never reads one).
      for (let i = 0; i < SIGN_IN_PER_IP_PER_MINUTE; i++)
        refused.push(
          (
            await attempt({
              ...(i % 2 ? { 'x-session-api-key': wrong } : {}),
              'cloudfront-viewer-address': `198.51.100.${i}:443`,
            })
          ).status,
        );
      const over = await attempt({ 'x-session-api-key': key });
      if (limiterMinute() !== began) continue;
      expect(refused).toEqual(Array(SIGN_IN_PER_IP_PER_MINUTE).fill(401));
      expect([over.status, over.body]).toEqual([429, { detail: SIGN_IN_PER_IP_REFUSAL }]);
      expectRetryAfterInWindow(over.headers['retry-after'], since);
      expect(over.headers['set-cookie']).toBeUndefined();
      expect(
        (await callFrom(`127.0.0.${70 + run}`, 'POST', '/api/authenticate', { 'x-session-api-key': key })).status,
      ).toBe(200);
      expect((await callFrom(from, 'GET', '/api/v1/users/me', { 'x-session-api-key': key })).status).toBe(200);
      return;
    }
    throw new Error('The minute turned during both runs');
  });
});
