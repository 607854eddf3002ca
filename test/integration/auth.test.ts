import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack?.stop());

describe('authentication over HTTP', () => {
  it('answers 401 without a key, on every user route', async () => {
    for (const path of ['/api/settings', '/api/v1/users/me']) {
      const res = await stack.call('GET', path, { key: null });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Unauthorized' });
    }
  });

  it('answers 401 for a wrong key, a malformed key and a key with a valid id but wrong secret', async () => {
    const forged = stack.devKey.slice(0, -4) + (stack.devKey.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const key of ['nonsense', `acs_0000000000000000_${'x'.repeat(43)}`, forged]) {
      const res = await stack.call('GET', '/api/v1/users/me', { key });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Unauthorized' });
    }
  });

  it('accepts the key as X-Session-API-Key and as Authorization: Bearer', async () => {
    const direct = await stack.call('GET', '/api/v1/users/me');
    expect(direct.status).toBe(200);
    expect(direct.body.id).toBe('dev');
    const bearer = await stack.call('GET', '/api/v1/users/me', {
      key: null,
      headers: { authorization: `Bearer ${stack.devKey}` },
    });
    expect(bearer.status).toBe(200);
    expect(bearer.body.id).toBe('dev');
  });

  it('refuses a revoked key', async () => {
    const key = await stack.newUser('revokee');
    expect((await stack.call('GET', '/api/v1/users/me', { key })).status).toBe(200);
    const [info] = await stack.services.apiKeys.list('revokee');
    expect(await stack.services.apiKeys.revoke(info!.keyId)).toBe(true);
    const res = await stack.call('GET', '/api/v1/users/me', { key });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Unauthorized' });
  });

  it('leaves /health and the API docs open', async () => {
    expect((await stack.call('GET', '/health', { key: null })).body).toEqual({ status: 'ok' });
    expect((await stack.call('GET', '/openapi.json', { key: null })).status).toBe(200);
    const docs = await stack.call('GET', '/docs', { key: null });
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toContain('text/html');
  });

  it("never lets user B read or change user A's settings", async () => {
    const alice = await stack.newUser('alice');
    const bob = await stack.newUser('bob');
    expect(
      (await stack.call('POST', '/api/settings', { key: alice, body: { llm_model: 'alice-model', language: 'fr' } }))
        .status,
    ).toBe(200);
    expect((await stack.call('GET', '/api/settings', { key: bob })).status).toBe(404);
    expect((await stack.call('POST', '/api/settings', { key: bob, body: { llm_model: 'bob-model' } })).status).toBe(
      200,
    );
    const a = await stack.call('GET', '/api/settings', { key: alice });
    expect(a.body.llm_model).toBe('alice-model');
    expect(a.body.language).toBe('fr');
    const b = await stack.call('GET', '/api/settings', { key: bob });
    expect(b.body.llm_model).toBe('bob-model');
    expect(b.body.language).toBeNull();
    expect((await stack.call('GET', '/api/v1/users/me', { key: bob })).body.id).toBe('bob');
  });
});
