import { createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest } from '#shared/http/errors.ts';

/**
 * Opaque page cursors: the store's LastEvaluatedKey, signed with HMAC-SHA256 over the scope
 * (user and list). A client can neither forge one nor replay it into another user's partition.
 */
export class CursorCodec {
  constructor(private readonly key: () => Promise<Buffer>) {}

  async encode(lastKey: Record<string, unknown> | undefined, scope: string): Promise<string | null> {
    if (!lastKey) return null;
    const payload = Buffer.from(JSON.stringify(lastKey), 'utf8').toString('base64url');
    return `${payload}.${await this.sign(payload, scope)}`;
  }

  /** The key to continue from; undefined for the first page; a 400 for anything not issued here. */
  async decode(pageId: string | undefined, scope: string): Promise<Record<string, unknown> | undefined> {
    if (pageId === undefined || pageId === '') return undefined;
    const [payload, sig, extra] = pageId.split('.');
    if (!payload || !sig || extra !== undefined) throw badRequest('Invalid page_id');
    const expected = Buffer.from(await this.sign(payload, scope), 'base64url');
    const actual = Buffer.from(sig, 'base64url');
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) throw badRequest('Invalid page_id');
    try {
      const key = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
      if (!key || typeof key !== 'object' || Array.isArray(key)) throw new Error('not an object');
      return key as Record<string, unknown>;
    } catch {
      throw badRequest('Invalid page_id');
    }
  }

  private async sign(payload: string, scope: string): Promise<string> {
    return createHmac('sha256', await this.key())
      .update(`${scope}\n${payload}`)
      .digest('base64url');
  }
}
