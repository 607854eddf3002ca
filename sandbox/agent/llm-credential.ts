import { createHash } from 'node:crypto';

/*
 * The LLM gateway's credential (`acsl.`, docs/platform-llms.md) is valid for an hour. A conversation
 * that runs longer fetches its start configuration again (the same bridge route, with the sandbox's own
 * key), which carries a freshly minted one, shortly before the one it holds expires (or once when the
 * gateway refuses the one it holds).
 */

/** The credential's expiry and issue time (ms), read from its claims; an infinite expiry for a key that is not one. */
export function credentialTimes(key: string): { expiry: number; issued?: number } {
  const none = { expiry: Number.POSITIVE_INFINITY };
  if (!key.startsWith('acsl.')) return none;
  try {
    const claims = JSON.parse(Buffer.from(key.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      e?: unknown;
      i?: unknown;
    };
    if (typeof claims.e !== 'number') return none;
    return { expiry: claims.e * 1000, ...(typeof claims.i === 'number' ? { issued: claims.i * 1000 } : {}) };
  } catch {
    return none;
  }
}

/** How long before its expiry a credential is renewed: a sixth of its lifetime, at most ten minutes. */
export function renewalMargin(key: string, maxMarginMs = 10 * 60_000): number {
  const { expiry, issued } = credentialTimes(key);
  return issued === undefined ? maxMarginMs : Math.min(maxMarginMs, (expiry - issued) / 6);
}

/**
 * The credential to send now: the one held while more than its renewal margin is left (or, with
 * `force`, after the gateway refused it), else a fresh one from `refetch` (one fetch at a time; on
 * failure the held one, so the gateway says what is wrong). `renewed` hears of each new one (the
 * sandbox masks it in events like the first).
 */
export function renewingKey(
  initial: string,
  refetch: () => Promise<string>,
  now: () => number = Date.now,
  renewed: (key: string) => void = () => {},
): (force?: boolean) => Promise<string> {
  let current = initial;
  let pending: Promise<string> | undefined;
  return async (force = false) => {
    if (!force && credentialTimes(current).expiry - now() > renewalMargin(current)) return current;
    pending ??= refetch()
      .then((key) => {
        if (key !== current) renewed(key);
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
export function fetchWithKey(key: (force?: boolean) => Promise<string>, base: typeof fetch = fetch): typeof fetch {
  const send = (k: string, input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const headers = new Headers(init?.headers);
    if (headers.has('authorization')) headers.set('authorization', `Bearer ${k}`);
    if (headers.has('x-api-key')) headers.set('x-api-key', k);
    headers.set('x-session-api-key', k);
    if (typeof init?.body === 'string')
      headers.set('x-amz-content-sha256', createHash('sha256').update(init.body).digest('hex'));
    return base(input, { ...init, headers });
  };
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const k = await key();
    const res = await send(k, input, init);
    if (res.status !== 401) return res;
    // Refused (expired early against a sandbox clock that runs behind, say): one try with a fresh credential.
    const fresh = await key(true);
    if (fresh === k) return res;
    await res.body?.cancel();
    return send(fresh, input, init);
  }) as typeof fetch;
}
