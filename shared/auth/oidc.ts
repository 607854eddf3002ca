import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';

/**
 * OpenID Connect tokens from the one configured issuer (`OIDC_ISSUER`, `OIDC_AUDIENCE`; on AWS the
 * stack sets them from CDK context or its Cognito pool), verified with `jose`:
 * - discovery through `<issuer>/.well-known/openid-configuration` (its `issuer` must equal ours), keys
 *   from its `jwks_uri` through `createRemoteJWKSet`, which caches them and refetches on an unknown
 *   `kid` at most once per 30 s cooldown per container (random `kid`s cannot flood the issuer);
 * - algorithms from the allow-list RS256, ES256 only, never from the token's header (so `none` and
 *   an HMAC token signed with the issuer's public key are refused);
 * - `exp`/`nbf`/`iat` with CLOCK_SKEW_SECONDS of tolerance.
 * API routes take access tokens (Cognito: `token_use: "access"` and `client_id` = audience;
 * other issuers: `aud` contains the audience, and not an ID token); ID tokens only at the console's
 * exchange endpoint (`verifyIdToken`, audience = the console's client id).
 */
export const ALGORITHMS = ['RS256', 'ES256'];
/** Clock skew allowed between the issuer and us, both ways. */
export const CLOCK_SKEW_SECONDS = 60;

export interface OidcConfig {
  issuer: string;
  /** What access tokens must be for (Cognito: the app client id; others: the API's audience). */
  audience: string;
  /** The console's client id, the audience of ID tokens (default: the audience, as with Cognito). */
  clientId: string;
}

/** The configuration from the environment, or null when no issuer is configured (keys only). */
export function oidcConfig(env: NodeJS.ProcessEnv = process.env): OidcConfig | null {
  const issuer = env.OIDC_ISSUER?.trim();
  if (!issuer) return null;
  const audience = env.OIDC_AUDIENCE?.trim();
  if (!audience) throw new Error('Configuration error: OIDC_AUDIENCE must be set with OIDC_ISSUER');
  return { issuer, audience, clientId: env.OIDC_CLIENT_ID?.trim() || audience };
}

/** A token refused, with the detail the 401 says (never the token). */
export class TokenRefused extends Error {
  override name = 'TokenRefused';
}

/** Whether a Bearer value has a JWT's form: three dot-separated base64url parts. */
export const isJwtForm = (value: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(value);

interface Discovery {
  issuer: string;
  jwks_uri: string;
  authorization_endpoint?: string;
  token_endpoint?: string;
  userinfo_endpoint?: string;
  end_session_endpoint?: string;
}

export class OidcVerifier {
  private discovery?: Promise<{ doc: Discovery; keys: JWTVerifyGetKey }>;

  constructor(
    readonly config: OidcConfig,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /** The issuer's discovery document (fetched once per container; again after a failure). */
  async metadata(): Promise<Discovery> {
    return (await this.load()).doc;
  }

  private load() {
    this.discovery ??= (async () => {
      const url = `${this.config.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
      const res = await this.fetchImpl(url, { signal: AbortSignal.timeout(5000) });
      if (!res.ok) throw new Error(`OpenID discovery at ${url} answered ${res.status}`);
      const doc = (await res.json()) as Discovery;
      if (doc.issuer !== this.config.issuer)
        throw new Error(`OpenID discovery at ${url} names issuer ${doc.issuer}, not ${this.config.issuer}`);
      if (typeof doc.jwks_uri !== 'string') throw new Error(`OpenID discovery at ${url} has no jwks_uri`);
      return {
        doc,
        keys: createRemoteJWKSet(new URL(doc.jwks_uri), { cooldownDuration: 30_000, timeoutDuration: 5000 }),
      };
    })().catch((err: unknown) => {
      this.discovery = undefined;
      throw err;
    });
    return this.discovery;
  }

  /** An access token for API routes: its claims, or TokenRefused. */
  async verifyAccessToken(token: string): Promise<JWTPayload> {
    const payload = await this.verify(token, undefined);
    if (payload.token_use !== undefined) {
      // Cognito: access tokens carry client_id and no aud.
      if (payload.token_use !== 'access')
        throw new TokenRefused('Invalid token: an ID token is not accepted here; send an access token');
      if (payload.client_id !== this.config.audience)
        throw new TokenRefused('Invalid token: issued for another client');
      return payload;
    }
    const aud = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
    if (!aud.includes(this.config.audience)) throw new TokenRefused('Invalid token: wrong audience (aud)');
    if (payload.nonce !== undefined)
      throw new TokenRefused('Invalid token: an ID token is not accepted here; send an access token');
    return payload;
  }

  /** An ID token at the console's exchange: audience the console's client, `nonce` as given. */
  async verifyIdToken(token: string, nonce: string): Promise<JWTPayload> {
    const payload = await this.verify(token, this.config.clientId);
    if (payload.token_use !== undefined && payload.token_use !== 'id')
      throw new TokenRefused('Invalid token: not an ID token');
    if (typeof payload.nonce !== 'string' || payload.nonce !== nonce)
      throw new TokenRefused('Invalid token: nonce mismatch');
    return payload;
  }

  private async verify(token: string, audience: string | undefined): Promise<JWTPayload> {
    let keys: JWTVerifyGetKey;
    try {
      keys = (await this.load()).keys;
    } catch {
      throw new TokenRefused('Token issuer unavailable: its discovery document could not be read');
    }
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: this.config.issuer,
        ...(audience ? { audience } : {}),
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_SKEW_SECONDS,
      });
      if (typeof payload.sub !== 'string' || !payload.sub) throw new TokenRefused('Invalid token: no subject (sub)');
      return payload;
    } catch (err) {
      throw refusalOf(err);
    }
  }
}

/** jose's errors as the detail of a 401 (never the token's content). */
function refusalOf(err: unknown): TokenRefused {
  if (err instanceof TokenRefused) return err;
  if (err instanceof errors.JWTExpired) return new TokenRefused('Invalid token: expired (exp)');
  if (err instanceof errors.JWTClaimValidationFailed) {
    const claim = err.claim;
    if (claim === 'iss') return new TokenRefused('Invalid token: wrong issuer (iss)');
    if (claim === 'aud') return new TokenRefused('Invalid token: wrong audience (aud)');
    if (claim === 'nbf') return new TokenRefused('Invalid token: not yet valid (nbf)');
    if (claim === 'iat') return new TokenRefused('Invalid token: issued in the future (iat)');
    return new TokenRefused(`Invalid token: claim ${claim} failed`);
  }
  if (err instanceof errors.JOSEAlgNotAllowed)
    return new TokenRefused(`Invalid token: algorithm not allowed (only ${ALGORITHMS.join(', ')})`);
  if (err instanceof errors.JWKSNoMatchingKey) return new TokenRefused('Invalid token: unknown signing key (kid)');
  if (err instanceof errors.JWSSignatureVerificationFailed) return new TokenRefused('Invalid token: bad signature');
  if (err instanceof errors.JWKSTimeout || (err instanceof errors.JOSEError && err.code === 'ERR_JWKS_INVALID'))
    return new TokenRefused('Token issuer unavailable: its keys could not be read');
  return new TokenRefused('Invalid token: malformed');
}

let shared: { key: string; verifier: OidcVerifier | null } | undefined;

/**
 * The verifier of the configured issuer, one per process (a Lambda container, the local server):
 * its discovery document and key set are cached across requests.
 */
export function oidcVerifier(env: NodeJS.ProcessEnv = process.env): OidcVerifier | null {
  const config = oidcConfig(env);
  const key = JSON.stringify(config);
  if (shared?.key !== key) shared = { key, verifier: config ? new OidcVerifier(config) : null };
  return shared.verifier;
}
