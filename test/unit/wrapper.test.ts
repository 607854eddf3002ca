import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { ApiError, conflict, tooManyRequests } from '#shared/http/errors.ts';
import type { Operation } from '#shared/http/operation.ts';
import { lambdaHandler, type ApiEvent } from '#shared/http/wrapper.ts';
import { logger } from '#shared/logging.ts';
import type { Services } from '#shared/services.ts';

const route = {
  id: 'test',
  method: 'POST',
  path: '/t',
  entry: 'x',
  auth: 'user',
  summary: '',
  tag: 't',
  tables: {},
} as const;
const schemas = { body: z.object({ n: z.number() }) };
const services = {} as Services;
const event = (body: string | undefined, userId = 'alice'): ApiEvent =>
  ({
    headers: { 'content-type': 'application/json' },
    body,
    rawQueryString: '',
    requestContext: { requestId: 'req-1', authorizer: { lambda: { userId } } },
  }) as unknown as ApiEvent;
const ctx = {} as Context;

describe('the handler wrapper', () => {
  it('turns an unexpected exception into a bare 500, logged with the request id', async () => {
    const spy = vi.spyOn(logger, 'error').mockImplementation(() => undefined);
    const op: Operation = {
      route,
      schemas,
      run: async () => {
        throw new Error('database exploded at /secret/path');
      },
    };
    const res = await lambdaHandler(op, () => services)(event('{"n":1}'), ctx);
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(res.body!)).toEqual({ detail: 'Internal Server Error' });
    expect(res.body).not.toContain('exploded');
    expect(res.headers?.['x-request-id']).toBe('req-1');
    expect(spy).toHaveBeenCalledWith('Unhandled error', expect.objectContaining({ requestId: 'req-1', route: 'test' }));
    spy.mockRestore();
  });

  it('maps domain errors and passes validated input', async () => {
    const seen: unknown[] = [];
    const op: Operation = {
      route,
      schemas,
      run: async (req) => {
        seen.push(req.body, req.userId);
        throw conflict('busy');
      },
    };
    const res = await lambdaHandler(op, () => services)(event('{"n":3,"extra":true}'), ctx);
    expect(res.statusCode).toBe(409);
    expect(JSON.parse(res.body!)).toEqual({ detail: 'busy' });
    expect(seen).toEqual([{ n: 3 }, 'alice']);
  });

  it('sends Retry-After with every 429: the one it was given (whole seconds, at least 1), else 1 second', async () => {
    const answer = async (err: ApiError) =>
      (
        await lambdaHandler({ route, schemas, run: async () => Promise.reject(err) }, () => services)(
          event('{"n":1}'),
          ctx,
        )
      ).headers?.['retry-after'];
    expect(await answer(tooManyRequests('slow down', 59.2))).toBe('60');
    expect(await answer(tooManyRequests('slow down', 0))).toBe('1');
    expect(await answer(new ApiError(429, { detail: 'made by hand' }))).toBe('1');
    expect(await answer(conflict('busy'))).toBeUndefined();
  });

  it('refuses a user route without an authorized user, before running it', async () => {
    const run = vi.fn();
    const res = await lambdaHandler({ route, schemas, run }, () => services)(event('{"n":1}', ''), ctx);
    expect(res.statusCode).toBe(401);
    expect(run).not.toHaveBeenCalled();
  });

  it('reads base64 bodies as API Gateway may send them', async () => {
    const op: Operation = { route, schemas, run: async (req) => req.body };
    const e = { ...event(Buffer.from('{"n":5}').toString('base64')), isBase64Encoded: true } as ApiEvent;
    const res = await lambdaHandler(op, () => services)(e, ctx);
    expect(JSON.parse(res.body!)).toEqual({ n: 5 });
  });
});
