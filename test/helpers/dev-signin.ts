import { createHash, randomBytes } from 'node:crypto';

/**
 * What the console does to sign in through the development OpenID provider, done over plain HTTP
 * (a cookie jar of its own): start, the authorization request with PKCE, the provider's login form,
 * the redirect back, and the code redeemed at the token endpoint. Tests then use the tokens, or
 * tamper with one step to play a hostile page.
 */
export interface Start {
  issuer: string;
  client_id: string;
  authorization_endpoint: string;
  token_endpoint: string;
  redirect_uri: string;
  nonce: string;
}

export class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0]!;
      const i = pair.indexOf('=');
      const name = pair.slice(0, i);
      const value = pair.slice(i + 1);
      if (value && !/max-age=0/i.test(line)) this.cookies.set(name, value);
      else this.cookies.delete(name);
    }
  }
  has(name: string): boolean {
    return this.cookies.has(name);
  }
  delete(name: string): void {
    this.cookies.delete(name);
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export async function startSignIn(base: string, jar: CookieJar): Promise<Start> {
  const res = await fetch(`${base}/api/auth/oidc/start`, { method: 'POST', headers: { origin: base } });
  if (res.status !== 200) throw new Error(`start answered ${res.status}: ${await res.text()}`);
  jar.take(res);
  return (await res.json()) as Start;
}

/**
 * From the authorization request to the callback: returns the callback URL (with `code` and
 * `state`), or the login page's status and text when the login is refused.
 */
export async function authorize(
  start: Start,
  login: { email: string; password: string },
  options: { state?: string; nonce?: string; challenge?: string } = {},
): Promise<{ callback?: URL; status: number; text: string }> {
  const jar = new CookieJar(); // the provider's cookies (another path than the API's)
  const url = new URL(start.authorization_endpoint);
  const params = {
    client_id: start.client_id,
    redirect_uri: start.redirect_uri,
    response_type: 'code',
    scope: 'openid email',
    state: options.state ?? 'state-1',
    nonce: options.nonce ?? start.nonce,
    code_challenge: options.challenge ?? '',
    code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
  let next = url.href;
  let loggedIn = false;
  for (let hop = 0; hop < 8; hop++) {
    const res = await fetch(next, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(res);
    const location = res.headers.get('location');
    if (location) {
      next = new URL(location, next).href;
      if (next.startsWith(start.redirect_uri)) return { callback: new URL(next), status: res.status, text: '' };
      continue;
    }
    const text = await res.text();
    const action = /action="([^"]+)"/.exec(text)?.[1];
    if (!action || loggedIn) return { status: res.status, text };
    const post = await fetch(new URL(action, next), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(login),
    });
    jar.take(post);
    const to = post.headers.get('location');
    if (!to) return { status: post.status, text: await post.text() };
    loggedIn = true;
    next = new URL(to, next).href;
  }
  throw new Error('too many redirects');
}

export const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** Redeems the code at the token endpoint, as the console page does (public client, PKCE). */
export async function redeem(start: Start, code: string, verifier: string) {
  const res = await fetch(start.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: start.redirect_uri,
      client_id: start.client_id,
      code_verifier: verifier,
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** The whole flow for `email`: the tokens, and the jar holding this browser's nonce cookie. */
export async function devTokens(base: string, email: string, password: string) {
  const jar = new CookieJar();
  const start = await startSignIn(base, jar);
  const { verifier, challenge } = pkce();
  const auth = await authorize(start, { email, password }, { challenge });
  if (!auth.callback) throw new Error(`sign-in refused (${auth.status}): ${auth.text.slice(0, 300)}`);
  const tokens = await redeem(start, auth.callback.searchParams.get('code')!, verifier);
  if (tokens.status !== 200) throw new Error(`token endpoint answered ${tokens.status}`);
  return { start, jar, idToken: tokens.body.id_token!, accessToken: tokens.body.access_token! };
}
