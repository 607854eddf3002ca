import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_SCHEMA_FILE, clientSchemaSource } from '#infra/client-types.ts';
import { pages, retryAfterMs, retryingFetch } from '#shared/client/index.ts';

/** The typed client (shared/client/): its committed types are the document's, and its retry and paging logic. */
describe('the typed client', () => {
  it('has the types of the current OpenAPI document (else: npm run generate:client)', { timeout: 60_000 }, async () => {
    expect(readFileSync(CLIENT_SCHEMA_FILE, 'utf8'), 'run `npm run generate:client`').toBe(await clientSchemaSource());
  });

  /** A scripted fetch: answers in order, and records what each attempt sent. */
  function scripted(...answers: (Response | Error)[]) {
    const sent: { method: string; url: string; key: string | null; body: string }[] = [];
    const fetch = async (request: Request) => {
      sent.push({
        method: request.method,
        url: request.url,
        key: request.headers.get('idempotency-key'),
        body: await request.text(),
      });
      const next = answers.shift()!;
      if (next instanceof Error) throw next;
      return next;
    };
    return { sent, fetch };
  }
  const post = (path: string, headers: Record<string, string> = {}) =>
    new Request(`http://api.test${path}`, { method: 'POST', body: '{"name":"ci"}', headers });

  it('retries a create after 429, waiting Retry-After, with the same Idempotency-Key it added', async () => {
    const { sent, fetch } = scripted(
      new Response('{"detail":"slow down"}', { status: 429, headers: { 'retry-after': '1' } }),
      new Response('{"id":"k"}', { status: 200 }),
    );
    const started = Date.now();
    const res = await retryingFetch({ attempts: 3, maxWaitMs: 5000, fetch })(post('/api/keys'));
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]!.key).toBe(sent[0]!.key);
    expect(sent[1]!.body).toBe('{"name":"ci"}');
  });

  it("keeps the caller's own key, and retries a 409 that says when (an in-progress repeat)", async () => {
    const { sent, fetch } = scripted(
      new Response('{"detail":"in progress"}', { status: 409, headers: { 'retry-after': '0' } }),
      new Response('{}', { status: 200 }),
    );
    await retryingFetch({ attempts: 3, maxWaitMs: 5000, fetch })(
      post('/api/v1/sandboxes', { 'idempotency-key': 'mine' }),
    );
    expect(sent.map((s) => s.key)).toEqual(['mine', 'mine']);
  });

  it('never repeats a POST that takes no Idempotency-Key, nor a 409 without Retry-After, nor past the attempts', async () => {
    const once = scripted(new Response('{}', { status: 429, headers: { 'retry-after': '0' } }));
    expect(
      (await retryingFetch({ attempts: 3, maxWaitMs: 5000, fetch: once.fetch })(post('/api/settings'))).status,
    ).toBe(429);
    expect(once.sent).toHaveLength(1);
    expect(once.sent[0]!.key).toBeNull();
    const conflict = scripted(new Response('{}', { status: 409 }));
    await retryingFetch({ attempts: 3, maxWaitMs: 5000, fetch: conflict.fetch })(post('/api/keys'));
    expect(conflict.sent).toHaveLength(1);
    const busy = () => new Response('{}', { status: 503, headers: { 'retry-after': '0' } });
    const three = scripted(busy(), busy(), busy(), busy());
    const res = await retryingFetch({ attempts: 3, maxWaitMs: 5000, fetch: three.fetch })(
      new Request('http://api.test/health'),
    );
    expect(res.status).toBe(503);
    expect(three.sent).toHaveLength(3);
  });

  it('gives up at once when Retry-After exceeds maxWaitMs, and retries a GET after a network error', async () => {
    const far = scripted(new Response('{}', { status: 429, headers: { 'retry-after': '3600' } }));
    expect((await retryingFetch({ attempts: 3, maxWaitMs: 5000, fetch: far.fetch })(post('/api/keys'))).status).toBe(
      429,
    );
    expect(far.sent).toHaveLength(1);
    const flaky = scripted(new TypeError('fetch failed'), new Response('{}', { status: 200 }));
    expect(
      (await retryingFetch({ attempts: 2, maxWaitMs: 5000, fetch: flaky.fetch })(new Request('http://api.test/health')))
        .status,
    ).toBe(200);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
  });

  it('pages through next_page_id until it is null, and throws an error answer', async () => {
    const seen: (string | undefined)[] = [];
    const book: Record<string, { items: number[]; next_page_id: string | null }> = {
      first: { items: [1, 2], next_page_id: 'p2' },
      p2: { items: [3], next_page_id: null },
    };
    const items: number[] = [];
    for await (const n of pages(async (pageId) => {
      seen.push(pageId);
      return { data: book[pageId ?? 'first'], response: new Response() };
    }))
      items.push(n);
    expect(items).toEqual([1, 2, 3]);
    expect(seen).toEqual([undefined, 'p2']);
    const failing = pages(async () => ({
      error: { detail: 'Invalid page_id' },
      response: new Response(null, { status: 400 }),
    }));
    await expect(failing.next()).rejects.toThrow('HTTP 400: Invalid page_id');
  });
});
