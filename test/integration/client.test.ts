import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClientError, type ApiClient, createApiClient, pages } from '#shared/client/index.ts';
import { startTestStack, type TestStack } from '#test/helpers/stack.ts';

/** The typed client (shared/client/) against the local stack over HTTP. */
let stack: TestStack;
let api: ApiClient;
const dir = mkdtempSync(join(tmpdir(), 'client-test-'));
/** What went over the wire: method, path, the Idempotency-Key and the status. */
const wire: { method: string; path: string; key: string | null; status: number }[] = [];

beforeAll(async () => {
  // Three specs, so a page of one has a next_page_id.
  const [spec] = JSON.parse(readFileSync(new URL('../../config/sandbox-specs.json', import.meta.url), 'utf8'));
  const specsFile = join(dir, 'specs.json');
  writeFileSync(specsFile, JSON.stringify(['one', 'two', 'three'].map((id) => ({ ...spec, id }))));
  stack = await startTestStack({ specsFile });
  api = createApiClient({
    baseUrl: `${stack.url}/`,
    key: stack.devKey,
    fetch: async (request) => {
      const response = await fetch(request);
      wire.push({
        method: request.method,
        path: new URL(request.url).pathname,
        key: request.headers.get('idempotency-key'),
        status: response.status,
      });
      return response;
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the typed client against npm start', () => {
  it('calls with the key (X-Session-API-Key) or as a bearer token, typed answers', async () => {
    const { data } = await api.GET('/api/v1/users/me');
    expect(data?.id).toBe('dev');
    const bearer = createApiClient({ baseUrl: stack.url, token: stack.devKey });
    expect((await bearer.GET('/api/v1/users/me')).data?.id).toBe('dev');
    const none = createApiClient({ baseUrl: stack.url });
    const refused = await none.GET('/api/v1/users/me');
    expect(refused.response.status).toBe(401);
    expect(refused.error).toEqual({ detail: 'Unauthorized' });
  });

  it('pages over next_page_id', async () => {
    const ids: string[] = [];
    for await (const spec of pages((page_id) =>
      api.GET('/api/v1/sandbox-specs/search', { params: { query: { page_id, limit: 1 } } }),
    ))
      ids.push(spec.id);
    expect(ids).toEqual(['one', 'two', 'three']);
    const forged = pages((page_id) =>
      api.GET('/api/v1/sandboxes/search', { params: { query: { page_id: page_id ?? 'forged' } } }),
    );
    await expect(forged.next()).rejects.toThrow(ApiClientError);
  });

  it('adds an Idempotency-Key to a create and, racing itself with one key, gets one record for all', async () => {
    const { data: created } = await api.POST('/api/keys', { body: { name: 'client-auto' } });
    expect(wire.findLast((w) => w.path === '/api/keys')!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(created?.key).toBeTruthy();
    // Five at once with one key: the API answers the losers 409 Retry-After: 1; the client waits and gets the first answer.
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        api.POST('/api/keys', { body: { name: 'client-raced' }, headers: { 'Idempotency-Key': key } }),
      ),
    );
    expect(new Set(answers.map((a) => a.data?.id)).size).toBe(1);
    expect(answers.every((a) => a.response.status === 200)).toBe(true);
    const sent = wire.filter((w) => w.key === key);
    expect(sent.some((w) => w.status === 409)).toBe(true);
    const { data: keys } = await api.GET('/api/keys');
    expect(keys?.filter((k) => k.name === 'client-raced')).toHaveLength(1);
    // A plain POST (no Idempotency-Key taken) is sent once and carries none.
    await api.POST('/api/settings', { body: { language: 'en' } });
    expect(wire.filter((w) => w.path === '/api/settings').map((w) => w.key)).toEqual([null]);
  });

  it('answers an invalid request with the typed 422 body', async () => {
    const { error, response } = await api.POST('/api/keys', { body: { name: '' } });
    expect(response.status).toBe(422);
    expect(error && 'detail' in error && Array.isArray(error.detail) && error.detail[0]?.loc).toEqual(['body', 'name']);
  });
});
