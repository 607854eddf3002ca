import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack?.stop());

describe('bad input gets its documented status and body', () => {
  it.each([
    [{ max_iterations: -1 }, 'max_iterations'],
    [{ max_iterations: 1.5 }, 'max_iterations'],
    [{ max_iterations: '10' }, 'max_iterations'],
    [{ max_budget_per_task: -0.01 }, 'max_budget_per_task'],
    [{ max_budget_per_task: 5e-324 }, 'max_budget_per_task'], // found by the fuzz test: DynamoDB cannot store it
    [{ remote_runtime_resource_factor: 0 }, 'remote_runtime_resource_factor'],
    [{ remote_runtime_resource_factor: 3 }, 'remote_runtime_resource_factor'],
    [{ remote_runtime_resource_factor: 16 }, 'remote_runtime_resource_factor'],
    [{ confirmation_mode: 'yes' }, 'confirmation_mode'],
    [{ enable_default_condenser: null }, 'enable_default_condenser'],
    [{ llm_base_url: 'ftp://nope' }, 'llm_base_url'],
    [{ language: 'x'.repeat(40) }, 'language'],
    [{ secrets_store: null }, 'secrets_store'],
    [{ mcp_config: { stdio_servers: [{ name: 'x' }] } }, 'mcp_config'],
    [{ mcp_config: { sse_servers: [{ url: 'not a url' }] } }, 'mcp_config'],
    [{ secrets_store: { custom_secrets: { 'bad name': 'x' } } }, 'secrets_store'],
    [{ secrets_store: { provider_tokens: { myspace: { token: 'x' } } } }, 'secrets_store'],
  ])('422 for %j naming %s', async (body, field) => {
    const res = await stack.call('POST', '/api/settings', { body });
    expect(res.status).toBe(422);
    expect(Array.isArray(res.body.detail)).toBe(true);
    const issue = res.body.detail[0];
    expect(issue).toMatchObject({ type: expect.any(String), msg: expect.any(String) });
    expect(issue.loc.slice(0, 2)).toEqual(['body', field]);
  });

  it('names every bad field at once', async () => {
    const res = await stack.call('POST', '/api/settings', {
      body: { max_iterations: -1, confirmation_mode: 'no', email: 5 },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: string[] }) => d.loc[1]).sort()).toEqual([
      'confirmation_mode',
      'email',
      'max_iterations',
    ]);
  });

  it('never echoes a secret in a 422', async () => {
    const res = await stack.call('POST', '/api/settings', {
      body: { llm_api_key: 12345678901, search_api_key: { deep: 'sk-echo-me' } },
    });
    expect(res.status).toBe(422);
    expect(res.text).not.toContain('12345678901');
    expect(res.text).not.toContain('sk-echo-me');
  });

  it('400 for malformed JSON, without quoting the body', async () => {
    const res = await stack.call('POST', '/api/settings', {
      rawBody: '{"llm_api_key": "sk-leak-this',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^Malformed JSON body/);
    expect(res.text).not.toContain('sk-leak-this');
  });

  it('415 for a wrong or missing content type', async () => {
    const wrong = await stack.call('POST', '/api/settings', {
      rawBody: '{}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(wrong.status).toBe(415);
    expect(wrong.body.detail).toContain('application/json');
    const missing = await stack.call('POST', '/api/settings', { rawBody: '{}' });
    expect(missing.status).toBe(415);
  });

  it('422 for a missing body and for a body that is not an object', async () => {
    const empty = await stack.call('POST', '/api/settings', {
      rawBody: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0].loc).toEqual(['body']);
    for (const body of [[1, 2], 'text', 7, null]) {
      const res = await stack.call('POST', '/api/settings', { body });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body']);
    }
  });

  it('413 for a body over the limit', async () => {
    const res = await stack.call('POST', '/api/settings', { body: { language: 'x'.repeat(1024 * 1024 + 10) } });
    expect(res.status).toBe(413);
    expect(res.body.detail).toMatch(/larger than the limit/);
  });

  it('404 for an unknown route and 405 (with Allow) for a wrong method', async () => {
    const unknown = await stack.call('GET', '/api/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Not Found' });
    const wrong = await stack.call('DELETE', '/api/settings');
    expect(wrong.status).toBe(405);
    expect(wrong.body).toEqual({ detail: 'Method Not Allowed' });
    expect(wrong.headers.get('allow')).toBe('GET, POST');
  });

  it('puts a request id on every response', async () => {
    for (const res of [
      await stack.call('GET', '/health'),
      await stack.call('GET', '/api/settings', { key: null }),
      await stack.call('GET', '/nope'),
      await stack.call('POST', '/api/settings', { body: { max_iterations: -1 } }),
    ]) {
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});

describe('fuzz: random JSON never gets a 5xx', () => {
  const fieldNames = [
    'language',
    'max_iterations',
    'llm_api_key',
    'mcp_config',
    'secrets_store',
    'confirmation_mode',
    'max_budget_per_task',
    'llm_base_url',
    'enable_default_condenser',
  ];
  const value = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
  );
  const body = fc.oneof(
    fc.dictionary(fc.constantFrom(...fieldNames, 'unknown', '__proto__', 'constructor'), value, { maxKeys: 6 }),
    fc.record({
      mcp_config: fc.dictionary(
        fc.constantFrom('sse_servers', 'stdio_servers', 'shttp_servers', 'x'),
        fc.array(fc.dictionary(fc.constantFrom('url', 'name', 'command', 'args', 'env', 'api_key'), value), {
          maxLength: 3,
        }),
      ),
      secrets_store: fc.dictionary(
        fc.constantFrom('provider_tokens', 'custom_secrets'),
        fc.dictionary(fc.string({ maxLength: 10 }), value),
      ),
    }),
    fc.jsonValue({ maxDepth: 2 }),
  );

  it('POST /api/settings then GET stay 2xx/4xx', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await stack.call('POST', '/api/settings', {
          rawBody: JSON.stringify(b),
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status).toBeLessThan(500);
        expect([200, 409, 422]).toContain(res.status);
        const got = await stack.call('GET', '/api/settings');
        expect([200, 404]).toContain(got.status);
      }),
      { numRuns: 150 },
    );
  });

  it('random bytes as a body stay 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 200 }), async (raw) => {
        const res = await stack.call('POST', '/api/settings', {
          rawBody: raw,
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status).toBeLessThan(500);
      }),
      { numRuns: 100 },
    );
  });
});

describe('input that used to reach a 5xx or echo a credential', () => {
  const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

  it('400 for JSON nested deeper than the limit, on a user route', async () => {
    const res = await stack.call('POST', '/api/settings', {
      rawBody: deep(100_000),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/nested deeper than \d+ levels/);
  });

  it('401 before any body is read on sandbox routes without their key, however deep the body', async () => {
    const sid = '0'.repeat(32);
    const cid = 'a'.repeat(32);
    for (const path of [
      `/api/v1/webhooks/${sid}/events/${cid}`,
      `/api/v1/webhooks/${sid}/conversations`,
      `/api/v1/sandboxes/${sid}/bridge/check-in`,
      `/api/v1/sandboxes/${sid}/bridge/heartbeat`,
    ]) {
      const res = await stack.call('POST', path, {
        key: null,
        rawBody: deep(100_000),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, path).toBe(401);
    }
  });

  it('422, not a 500 from the key size, for a conversation id of any length on events search and count', async () => {
    for (const route of ['search', 'count']) {
      const res = await stack.call('GET', `/api/v1/events/${route}?conversation_id__eq=${'a'.repeat(3000)}`);
      expect(res.status, route).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['query', 'conversation_id__eq']);
      expect(res.text.length).toBeLessThan(2000);
    }
  });

  it('422 for a date-time bound of any length (DynamoDB refuses key values over 1 KB)', async () => {
    const long = `2020-01-01T00:00:00.${'1'.repeat(3000)}Z`;
    for (const path of [
      '/api/v1/app-conversations/search?created_at__gte=',
      '/api/v1/app-conversations/count?created_at__lt=',
      '/api/v1/app-conversations/start-tasks/search?created_at__gte=',
    ]) {
      expect((await stack.call('GET', `${path}${long}`)).status, path).toBe(422);
    }
    expect(
      (
        await stack.call(
          'GET',
          '/api/v1/app-conversations/search?created_at__gte=2020-01-01T00:00:00.123456789%2B02:00',
        )
      ).status,
    ).toBe(200);
  });

  it('strips credentials from the input a 422 echoes', async () => {
    const res = await stack.call('POST', '/api/settings', {
      body: { llm_base_url: 'ftp://someone:sk-live-CRED1234567@example.com/v1?api_key=QUERYCRED99' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'llm_base_url']);
    expect(res.text).not.toContain('CRED1234567');
    expect(res.text).not.toContain('someone');
    expect(res.text).not.toContain('QUERYCRED99');
    expect(res.text).toContain('example.com');
  });
});
