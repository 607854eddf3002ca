import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/**
 * An OpenID issuer of the test's own on loopback: a discovery document and a JWKS (an RS256 and an
 * ES256 key made with jose), counting JWKS fetches; it signs whatever tokens a test asks for.
 */
export interface TestIssuer {
  issuer: string;
  jwksFetches: number;
  /** Signs `claims` (iss, iat, exp filled in unless given) with the RS256 key, or ES256, or a key not in the JWKS. */
  sign(
    claims: JWTPayload,
    options?: { alg?: 'RS256' | 'ES256'; kid?: string; key?: 'unknown'; header?: Record<string, unknown> },
  ): Promise<string>;
  /** A token with `alg: none` (no signature). */
  unsigned(claims: JWTPayload): string;
  /** An HS256 token whose HMAC key is the issuer's public RSA key (the algorithm-confusion attack). */
  hmacWithPublicKey(claims: JWTPayload): string;
  /**
   * Who the authorization endpoint signs in (no page of its own: it answers at once with a code for
   * this person, as an issuer with a remembered session does); `undefined` answers `access_denied`.
   */
  login: { sub: string; email: string } | undefined;
  /** Origins whose token requests get CORS headers (a browser console of another origin). */
  corsOrigins: string[];
  /** Token requests received, with whether the PKCE verifier matched. */
  tokenRequests: { origin: string | undefined; pkce: boolean }[];
  close(): Promise<void>;
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** `path`: the issuer URL's path, as Cognito's `https://cognito-idp.<region>.amazonaws.com/<pool id>` has one. */
export async function startTestIssuer(options: { path?: string } = {}): Promise<TestIssuer> {
  const path = options.path ? `/${options.path.replace(/^\/+|\/+$/g, '')}` : '';
  const rsa = await generateKeyPair('RS256', { extractable: true });
  const ec = await generateKeyPair('ES256', { extractable: true });
  const stray = await generateKeyPair('RS256', { extractable: true });
  const rsaJwk: JWK = { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' };
  const ecJwk: JWK = { ...(await exportJWK(ec.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' };
  const state = { jwksFetches: 0 };
  let issuer = '';
  const codes = new Map<
    string,
    { clientId: string; redirectUri: string; nonce: string; challenge: string; sub: string; email: string }
  >();
  const flow = {
    login: undefined as { sub: string; email: string } | undefined,
    corsOrigins: [] as string[],
    tokenRequests: [] as { origin: string | undefined; pkce: boolean }[],
  };
  const nowS = () => Math.floor(Date.now() / 1000);
  const signRs = (claims: JWTPayload) =>
    new SignJWT({ iss: issuer, iat: nowS(), exp: nowS() + 600, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1', typ: 'JWT' })
      .sign(rsa.privateKey);
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://issuer');
    // Authorization code + PKCE, as the console uses it: a code for `flow.login`, bound to the challenge and nonce.
    if (url.pathname === `${path}/auth` && req.method === 'GET') {
      const q = url.searchParams;
      const redirect = new URL(q.get('redirect_uri') ?? 'http://invalid/');
      redirect.search = '';
      if (q.get('state')) redirect.searchParams.set('state', q.get('state')!);
      if (!flow.login || q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256') {
        redirect.searchParams.set('error', 'access_denied');
      } else {
        const code = randomBytes(16).toString('hex');
        codes.set(code, {
          clientId: q.get('client_id') ?? '',
          redirectUri: q.get('redirect_uri') ?? '',
          nonce: q.get('nonce') ?? '',
          challenge: q.get('code_challenge') ?? '',
          ...flow.login,
        });
        redirect.searchParams.set('code', code);
      }
      res.statusCode = 302;
      res.setHeader('location', redirect.href);
      return res.end();
    }
    if (url.pathname === `${path}/token`) {
      const origin = req.headers.origin;
      if (origin && flow.corsOrigins.includes(origin)) res.setHeader('access-control-allow-origin', origin);
      if (req.method === 'OPTIONS') {
        res.setHeader('access-control-allow-methods', 'POST');
        res.setHeader('access-control-allow-headers', 'content-type');
        res.statusCode = 204;
        return res.end();
      }
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const grant = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        const pkce = !!grant && createHash('sha256').update(verifier).digest('base64url') === grant.challenge;
        flow.tokenRequests.push({ origin, pkce });
        res.setHeader('content-type', 'application/json');
        if (
          !grant ||
          !pkce ||
          form.get('redirect_uri') !== grant.redirectUri ||
          form.get('client_id') !== grant.clientId
        ) {
          res.statusCode = 400;
          return res.end(JSON.stringify({ error: 'invalid_grant' }));
        }
        void signRs({
          sub: grant.sub,
          aud: grant.clientId,
          nonce: grant.nonce,
          email: grant.email,
          email_verified: true,
        }).then((idToken) => res.end(JSON.stringify({ id_token: idToken, token_type: 'Bearer', expires_in: 600 })));
      });
      return;
    }
    if (url.pathname === `${path}/.well-known/openid-configuration`) {
      res.setHeader('content-type', 'application/json');
      return res.end(
        JSON.stringify({
          issuer,
          jwks_uri: `${issuer}/jwks`,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
        }),
      );
    }
    if (req.url === `${path}/jwks`) {
      state.jwksFetches++;
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ keys: [rsaJwk, ecJwk] }));
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  const now = () => Math.floor(Date.now() / 1000);
  return {
    issuer,
    get login() {
      return flow.login;
    },
    set login(who) {
      flow.login = who;
    },
    corsOrigins: flow.corsOrigins,
    tokenRequests: flow.tokenRequests,
    get jwksFetches() {
      return state.jwksFetches;
    },
    async sign(claims, options = {}) {
      const alg = options.alg ?? 'RS256';
      const key: CryptoKey =
        options.key === 'unknown' ? stray.privateKey : alg === 'ES256' ? ec.privateKey : rsa.privateKey;
      const kid = options.kid ?? (alg === 'ES256' ? 'ec-1' : 'rsa-1');
      return new SignJWT({ iss: issuer, iat: now(), exp: now() + 600, ...claims })
        .setProtectedHeader({ alg, kid, typ: 'JWT', ...options.header })
        .sign(key);
    },
    unsigned(claims) {
      return `${b64({ alg: 'none', kid: 'rsa-1' })}.${b64({ iss: issuer, iat: now(), exp: now() + 600, ...claims })}.`;
    },
    hmacWithPublicKey(claims) {
      const input = `${b64({ alg: 'HS256', kid: 'rsa-1', typ: 'JWT' })}.${b64({ iss: issuer, iat: now(), exp: now() + 600, ...claims })}`;
      // Both the JWK's JSON and its modulus, as an attacker would try: here the JSON form.
      const mac = createHmac('sha256', JSON.stringify(rsaJwk)).update(input).digest('base64url');
      return `${input}.${mac}`;
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        // A browser or the server under test may hold keep-alive sockets open; close() alone waits for them.
        server.closeAllConnections();
      }),
  };
}
