import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler } from '../../functions/fallback.ts';
import { startTestStack } from '#test/helpers/stack.ts';

const event = (method: string, rawPath: string) =>
  ({ rawPath, requestContext: { requestId: 'req-1', http: { method } } }) as unknown as APIGatewayProxyEventV2;

describe('the $default route (functions/fallback.ts)', () => {
  it('answers an unknown path with 404 {"detail":"Not Found"}', async () => {
    const res = await handler(event('GET', '/api/v1/nothing-here'));
    expect(res.statusCode).toBe(404);
    expect(JSON.parse(res.body!)).toEqual({ detail: 'Not Found' });
    expect(res.headers).toMatchObject({ 'content-type': 'application/json', 'x-request-id': 'req-1' });
  });

  it('answers a known path with the wrong method with 405 and the allowed methods', async () => {
    const res = await handler(event('DELETE', '/api/settings'));
    expect(res.statusCode).toBe(405);
    expect(JSON.parse(res.body!)).toEqual({ detail: 'Method Not Allowed' });
    expect(String(res.headers!.allow).split(', ').sort()).toEqual(['GET', 'POST']);
  });

  it('answers exactly as the local gateway does', async () => {
    const stack = await startTestStack();
    try {
      for (const [method, path] of [
        ['GET', '/nope'],
        ['PUT', '/api/settings'],
        ['POST', '/health'],
        ['GET', '/api/v1/users/me/extra'],
      ] as const) {
        const local = await stack.call(method, path);
        const aws = await handler(event(method, path));
        expect(
          { status: aws.statusCode, body: JSON.parse(aws.body!), allow: aws.headers!.allow ?? null },
          `${method} ${path}`,
        ).toEqual({
          status: local.status,
          body: local.body,
          allow: local.headers.get('allow'),
        });
      }
      // An OPTIONS no CORS rule answered: 204 without CORS headers on both.
      for (const path of ['/api/settings', '/nope']) {
        const local = await fetch(`${stack.url}${path}`, {
          method: 'OPTIONS',
          headers: { origin: 'http://unlisted.example' },
        });
        const aws = await handler(event('OPTIONS', path));
        expect([aws.statusCode, aws.body], path).toEqual([local.status, await local.text()]);
        expect(Object.keys(aws.headers!).filter((h) => h.startsWith('access-control-'))).toEqual([]);
        expect([...local.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
      }
    } finally {
      await stack.stop();
    }
  });
});
