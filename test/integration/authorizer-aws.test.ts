import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import type { APIGatewayRequestAuthorizerEventV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTables, startDynalite, useLocalTables, type EmbeddedDynamo } from '#infra/local/dynamo.ts';
import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import type { ApiEvent, ApiResult } from '#shared/http/wrapper.ts';
import type { Services } from '#shared/services.ts';
import { storedConversation } from '#test/helpers/conversations.ts';

/**
 * The Lambda authorizer and the route wrapper as API Gateway calls them (payload 2.0: cookies in
 * `event.cookies`, https), with the AWS adapters on dynalite and KMS at the SDK boundary.
 */
const HOST = 'abc123.execute-api.eu-west-1.amazonaws.com';
const UI = 'https://app.example.com';
let dynamo: EmbeddedDynamo;
let services: Services;
const kms = mockClient(KMSClient);
let authorize: (
  event: APIGatewayRequestAuthorizerEventV2,
) => Promise<{ isAuthorized: boolean; context: AuthorizerContext }>;

beforeAll(async () => {
  dynamo = await startDynalite();
  useLocalTables(dynamo.endpoint, 'authorizer-aws');
  await createTables(dynamo.endpoint, 'authorizer-aws');
  Object.assign(process.env, { AWS_REGION: 'eu-west-1', SECRETS_KEY_ID: 'alias/acs-secrets', CORS_ORIGINS: UI });
  kms.on(EncryptCommand).callsFake(async ({ Plaintext, EncryptionContext }) => ({
    CiphertextBlob: Buffer.from(JSON.stringify({ c: EncryptionContext, p: Buffer.from(Plaintext).toString('base64') })),
  }));
  kms.on(DecryptCommand).callsFake(async ({ CiphertextBlob }) => ({
    Plaintext: Buffer.from(JSON.parse(Buffer.from(CiphertextBlob).toString('utf8')).p, 'base64'),
  }));
  // The authorizer's own adapters, plus the conversation store's writes (a revocation).
  const [{ servicesOf }, { allServices }, { wire }, keys, conversations, { sealer }] = await Promise.all([
    import('#shared/services.ts'),
    import('#shared/services/all.ts'),
    import('#shared/wiring/adapters.ts'),
    import('#shared/wiring/aws/keys.ts'),
    import('#shared/wiring/aws/conversations.ts'),
    import('#shared/wiring/aws/kms.ts'),
  ]);
  services = servicesOf(
    'test',
    wire(
      'test',
      { tables: { keys: 'write', conversations: 'write' }, capabilities: ['seal', 'unseal'] },
      {
        keyStore: keys.keyStore,
        sessionStore: keys.sessionStore,
        conversationKeySecret: keys.conversationKeySecret,
        sealer,
        conversationStore: conversations.conversationStore,
      },
    ),
    allServices,
  );
  authorize = (await import('../../functions/auth/authorizer.ts')).handler as never;
});
afterAll(async () => {
  kms.restore();
  await dynamo?.close();
});

function authorizerEvent(
  method: string,
  headers: Record<string, string>,
  cookies?: string[],
): APIGatewayRequestAuthorizerEventV2 {
  return {
    version: '2.0',
    type: 'REQUEST',
    routeArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/$default/GET/api/settings',
    identitySource: [],
    routeKey: `${method} /api/settings`,
    rawPath: '/api/settings',
    rawQueryString: '',
    headers: { host: HOST, 'x-forwarded-proto': 'https', ...headers },
    ...(cookies ? { cookies } : {}),
    requestContext: { http: { method, path: '/api/settings' } },
  } as unknown as APIGatewayRequestAuthorizerEventV2;
}

let n = 0;
async function invoke(
  entry: string,
  method: string,
  path: string,
  auth: AuthorizerContext,
  init: { query?: string; params?: Record<string, string>; body?: unknown } = {},
) {
  const { handler } = (await import(`../../functions/${entry}`)) as {
    handler: (e: ApiEvent, c: Context) => Promise<ApiResult>;
  };
  const event = {
    version: '2.0',
    rawPath: path,
    rawQueryString: init.query ?? '',
    headers: { host: HOST, 'x-forwarded-proto': 'https', ...(init.body ? { 'content-type': 'application/json' } : {}) },
    pathParameters: init.params,
    body: init.body ? JSON.stringify(init.body) : undefined,
    isBase64Encoded: false,
    requestContext: { requestId: `req-${++n}`, http: { method, path }, authorizer: { lambda: auth } },
  } as unknown as ApiEvent;
  const result = await handler(event, {} as Context);
  return { status: result.statusCode!, body: JSON.parse(result.body as string), headers: result.headers ?? {} };
}

describe('the Lambda authorizer', () => {
  it('accepts an API key in either header', async () => {
    const { key, record } = await services.apiKeys.create('erin', 'test');
    // With the caller's organization and role (the account is made on first use).
    expect((await authorize(authorizerEvent('GET', { 'x-session-api-key': key }))).context).toMatchObject({
      userId: 'erin',
      via: 'key',
      keyId: record.keyId,
      orgId: expect.stringMatching(/^org_/),
      role: 'owner',
    });
    expect((await authorize(authorizerEvent('GET', { authorization: `Bearer ${key}` }))).context.userId).toBe('erin');
    expect((await authorize(authorizerEvent('GET', { 'x-session-api-key': `${key}x` }))).context).toEqual({
      userId: '',
    });
  });

  it('reads the session cookie from payload 2.0 `cookies`, and checks the Origin on writes', async () => {
    const { record } = await services.apiKeys.create('frank', 'test');
    const { token } = await services.sessions.create('frank', record.keyId);
    const cookies = ['theme=dark', `__Host-acs_session=${token}`];
    expect(
      (await authorize(authorizerEvent('GET', { 'sec-fetch-site': 'same-origin' }, cookies))).context,
    ).toMatchObject({ userId: 'frank', via: 'session', originVerified: false });
    expect((await authorize(authorizerEvent('POST', { origin: UI }, cookies))).context).toMatchObject({
      userId: 'frank',
      originVerified: true,
    });
    expect((await authorize(authorizerEvent('POST', { origin: `https://${HOST}` }, cookies))).context).toMatchObject({
      userId: 'frank',
      originVerified: true,
    });
    const refused = (await authorize(authorizerEvent('POST', { origin: 'https://evil.example.com' }, cookies))).context;
    expect(refused).toMatchObject({ userId: '', refusal: expect.stringMatching(/Cross-site/) });
    expect((await authorize(authorizerEvent('POST', {}, cookies))).context.userId).toBe('');
    // Over https only the __Host- cookie counts (one planted by a sibling subdomain under the plain name does not).
    expect((await authorize(authorizerEvent('POST', { origin: UI }, [`acs_session=${token}`]))).context.userId).toBe(
      '',
    );
    // The route answers that refusal as a 403 with its reason.
    const res = await invoke('settings/get.ts', 'GET', '/api/settings', refused);
    expect(res.status).toBe(403);
    expect(res.body.detail).toMatch(/Cross-site/);
  });

  it("accepts a conversation-scoped key only on its conversation's declared routes", async () => {
    const id = await storedConversation('gina', { id: 'c'.repeat(32), title: 't' });
    const key = await services.conversationKeys.mint('gina', id, 1);
    const context = (await authorize(authorizerEvent('GET', { 'x-session-api-key': key }))).context;
    expect(context).toMatchObject({ userId: 'gina', via: 'conversation', conversationId: id, role: 'owner' });
    expect(
      (await invoke('events/count.ts', 'GET', '/api/v1/events/count', context, { query: `conversation_id__eq=${id}` }))
        .body,
    ).toBe(0);
    expect(
      (
        await invoke('events/count.ts', 'GET', '/api/v1/events/count', context, {
          query: `conversation_id__eq=${'d'.repeat(32)}`,
        })
      ).status,
    ).toBe(403);
    // The settings answer a conversation key with its own conversation's view (Agent Canvas's local mode).
    const view = await invoke('settings/get.ts', 'GET', '/api/settings', context);
    expect(view.status).toBe(200);
    expect(Object.keys(view.body).filter((k) => k.endsWith('_set') || k.includes('api_key'))).toEqual([]);
    expect((await invoke('keys/list.ts', 'GET', '/api/keys', context)).status).toBe(403);
    await services.conversationCommands.revokeKey('gina', id);
    expect((await authorize(authorizerEvent('GET', { 'x-session-api-key': key }))).context).toEqual({ userId: '' });
  });
});

describe('sign-in on AWS', () => {
  it('sets a Secure cookie over https', async () => {
    const { record } = await services.apiKeys.create('hana', 'test');
    const res = await invoke('auth/authenticate.ts', 'POST', '/api/authenticate', {
      userId: 'hana',
      via: 'key',
      keyId: record.keyId,
    });
    expect(res.status).toBe(200);
    expect(res.headers['set-cookie']).toMatch(
      /^__Host-acs_session=acss_[A-Za-z0-9_-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure$/,
    );
  });
});
