import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CursorCodec } from '#shared/http/cursor.ts';
import { ApiError } from '#shared/http/errors.ts';

const codec = new CursorCodec(async () => randomBytes(32));
const fixed = randomBytes(32);
const stable = new CursorCodec(async () => fixed);

describe('CursorCodec', () => {
  it('round-trips a key within its scope; no key means no cursor', async () => {
    const key = { id: 'abc', userId: 'alice', createdAt: '2026-01-01T00:00:00Z' };
    const cursor = await stable.encode(key, 'alice:sandboxes');
    expect(cursor).toBeTypeOf('string');
    expect(await stable.decode(cursor!, 'alice:sandboxes')).toEqual(key);
    expect(await stable.encode(undefined, 'alice:sandboxes')).toBeNull();
    expect(await stable.decode(undefined, 'x')).toBeUndefined();
  });

  it.each([
    ['another scope (user)', async (c: string) => stable.decode(c, 'bob:sandboxes')],
    [
      'a tampered payload',
      async (c: string) =>
        stable.decode(
          Buffer.from('{"userId":"bob"}').toString('base64url') + c.slice(c.indexOf('.')),
          'alice:sandboxes',
        ),
    ],
    [
      'a tampered signature',
      async (c: string) => stable.decode(c.slice(0, -2) + (c.endsWith('AA') ? 'BB' : 'AA'), 'alice:sandboxes'),
    ],
    ['garbage', async () => stable.decode('not-a-cursor', 'alice:sandboxes')],
    ['another signing key', async (c: string) => codec.decode(c, 'alice:sandboxes')],
  ])('rejects %s with a 400', async (_name, attempt) => {
    const cursor = (await stable.encode({ id: 'abc', userId: 'alice' }, 'alice:sandboxes'))!;
    const err = await attempt(cursor).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).body).toEqual({ detail: 'Invalid page_id' });
  });
});
