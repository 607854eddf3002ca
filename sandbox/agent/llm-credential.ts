import { createHash } from 'node:crypto';

/*
 * The LLM gateway's credential (`acsl.`, docs/platform-llms.md) is valid for an hour. A conversation
 * that runs longer fetches its start configuration again (the same webhook, with the sandbox's own
 * key), which carries a freshly minted one, shortly before the one it holds expires.
 */

/** The credential's expiry (ms), read from its claims; Infinity for a key that is not one. */
export function credentialExpiry(key: string): number {
  if (!key.startsWith('acsl.')) return Number.POSITIVE_INFINITY;
  try {
    const claims = JSON.parse(Buffer.from(key.split('.')[1] ?? '', 'base64url').toString('utf8')) as { e?: unknown };
    return typeof claims.e === 'number' ? claims.e * 1000 : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * The credential to send now: the one held while it has more than `marginMs` left, else a fresh one
 * from `refetch` (one fetch at a time; on failure the held one, so the gateway says what is wrong).
 */
export function renewingKey(
  initial: string,
  refetch: () => Promise<string>,
  now: () => number = Date.now,
  marginMs = 10 * 60_000,
): () => Promise<string> {
  let current = initial;
  let pending: Promise<string> | undefined;
  return async () => {
    if (credentialExpiry(current) - now() > marginMs) return current;
    pending ??= refetch()
      .then((key) => {
        current = key;
        return key;
      })
      .finally(() => {
        pending = undefined;
      });
    try {
      return await pending;
    } catch {
      return current;
    }
  };
}

/**
 * A fetch that puts the current credential in the header the SDK put the first one in, and also in
 * `X-Session-API-Key`: on AWS, CloudFront's origin access control signs each request and overwrites
 * `Authorization`, and a signed POST needs `x-amz-content-sha256` (the body's SHA-256), added here too.
 */
export function fetchWithKey(key: () => Promise<string>, base: typeof fetch = fetch): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const headers = new Headers(init?.headers);
    const k = await key();
    if (headers.has('authorization')) headers.set('authorization', `Bearer ${k}`);
    if (headers.has('x-api-key')) headers.set('x-api-key', k);
    headers.set('x-session-api-key', k);
    if (typeof init?.body === 'string')
      headers.set('x-amz-content-sha256', createHash('sha256').update(init.body).digest('hex'));
    return base(input, { ...init, headers });
  }) as typeof fetch;
}
