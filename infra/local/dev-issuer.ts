import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';

/**
 * The development OpenID provider `npm start` runs when no `OIDC_ISSUER` is configured, so that
 * signing in with OpenID works out of the box. DEVELOPMENT ONLY: the local server mounts it on its
 * own port under `/oidc` (no second listener: sandboxes share loopback), and only when it listens
 * on a loopback address; nothing of it is deployed to AWS (infra/ never imports it).
 *
 * It is the `oidc-provider` package (certified OpenID Provider), version 8, the line for Node 20,
 * this project's floor (docs/sign-in.md says why not 9.x). Authorization code + PKCE for one public client (the console,
 * no secret), RS256 and ES256 keys generated at first start into the data dir, JWT access tokens
 * for the API (audience DEV_AUDIENCE, with the person's email), ID tokens for the console. Its own
 * `devInteractions` are off: the login step here asks for an email (the person is that email: `sub`
 * and a verified `email`) and the development password, generated into the data dir and printed by
 * `npm start` (a contained sandbox cannot read the data dir, so an agent cannot sign in as anyone).
 */
export const DEV_ISSUER_PATH = '/oidc';
export const DEV_CLIENT_ID = 'acs-console';
export const DEV_AUDIENCE = 'acs-api';
const DEV_RESOURCE = 'urn:acs:api';
const SCOPE = 'openid email';
/** The data dir's files: the signing keys and cookie keys, and the login password (both 0600). */
export const DEV_KEYS_FILE = 'dev-oidc-keys.json';
export const DEV_PASSWORD_FILE = 'dev-signin-password';

export interface DevIssuerSecrets {
  keys: StoredKeys;
  password: string;
}

export interface DevIssuer {
  issuer: string;
  clientId: string;
  audience: string;
  password: string;
  /** Serves a request whose path is under DEV_ISSUER_PATH. */
  handle(req: IncomingMessage, res: ServerResponse): void;
}

interface StoredKeys {
  jwks: JWK[];
  cookieKeys: string[];
}

/** The keys made at first start (RS256 and ES256 signing keys, cookie keys), kept in the data dir. */
async function loadKeys(dataDir: string): Promise<StoredKeys> {
  const file = join(dataDir, DEV_KEYS_FILE);
  try {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as StoredKeys;
    if (Array.isArray(stored.jwks) && stored.jwks.length && Array.isArray(stored.cookieKeys)) return stored;
  } catch {
    // First start (or an unreadable file): make new ones.
  }
  const rsa = await generateKeyPair('RS256', { extractable: true });
  const ec = await generateKeyPair('ES256', { extractable: true });
  const keys: StoredKeys = {
    jwks: [
      { ...(await exportJWK(rsa.privateKey)), kid: `rs-${randomBytes(6).toString('hex')}`, alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(ec.privateKey)), kid: `es-${randomBytes(6).toString('hex')}`, alg: 'ES256', use: 'sig' },
    ],
    cookieKeys: [randomBytes(32).toString('base64url')],
  };
  writeFileSync(file, JSON.stringify(keys), { mode: 0o600 });
  return keys;
}

/** The login password: made at first start, kept in the data dir (0600). */
function loadPassword(dataDir: string): string {
  const file = join(dataDir, DEV_PASSWORD_FILE);
  try {
    const stored = readFileSync(file, 'utf8').trim();
    if (stored.length >= 16) return stored;
  } catch {
    // First start.
  }
  const password = randomBytes(12).toString('base64url');
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * The provider's state (sessions, codes, grants) in this process's memory: lost at restart, which
 * only signs people out of the development provider (the service's own sessions are in dynalite).
 */
function memoryAdapter() {
  const items = new Map<string, { payload: Record<string, unknown>; expires: number }>();
  const live = (key: string) => {
    const item = items.get(key);
    if (item && item.expires < Date.now()) items.delete(key);
    return items.get(key)?.payload;
  };
  return class MemoryAdapter {
    constructor(private readonly name: string) {}
    private key = (id: string) => `${this.name}:${id}`;
    async upsert(id: string, payload: Record<string, unknown>, expiresIn: number) {
      items.set(this.key(id), {
        payload,
        expires: expiresIn ? Date.now() + expiresIn * 1000 : Number.MAX_SAFE_INTEGER,
      });
      if (payload.uid) items.set(`${this.name}:uid:${String(payload.uid)}`, items.get(this.key(id))!);
    }
    async find(id: string) {
      return live(this.key(id));
    }
    async findByUid(uid: string) {
      return live(`${this.name}:uid:${uid}`);
    }
    async findByUserCode() {
      return undefined;
    }
    async consume(id: string) {
      const payload = live(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      const payload = live(this.key(id));
      items.delete(this.key(id));
      if (payload?.uid) items.delete(`${this.name}:uid:${String(payload.uid)}`);
    }
    async revokeByGrantId(grantId: string) {
      for (const [key, item] of items) if (item.payload.grantId === grantId) items.delete(key);
    }
  };
}

/** What the login form accepts as an email: one address, no spaces (it becomes `sub` and `email`). */
const EMAIL = /^[^\s@<>"]{1,64}@[^\s@<>"]{1,190}$/;
const sameSecret = (a: string, b: string) =>
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function loginPage(uid: string, error?: string, email = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Development sign-in</title><style>
body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
.warn{background:#fff3cd;border:1px solid #e0c36a;padding:.6rem .8rem;border-radius:4px}
label{display:block;margin-top:1rem}input{width:100%;padding:.4rem;box-sizing:border-box}
button{margin-top:1rem;padding:.5rem 1rem}.error{color:#a40000}</style></head>
<body><h1>Development sign-in</h1>
<p class="warn"><strong>Development only.</strong> This is the local server's own OpenID provider (<code>npm start</code>
without <code>OIDC_ISSUER</code>). Any email works: you become that person. The password is the one
<code>npm start</code> printed (also in the data dir, <code>${DEV_PASSWORD_FILE}</code>).</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${DEV_ISSUER_PATH}/interaction/${encodeURIComponent(uid)}/login">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(email)}">
<label for="password">Development password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></body></html>`;
}

/**
 * The login page's headers. `form-action` covers the redirects after the form too (Chromium enforces
 * it there): back to the console's callback, on either of its origins.
 */
const pageHeaders = (origins: string[]) => ({
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${origins.join(' ')}; frame-ancestors 'none'`,
  'x-frame-options': 'DENY',
});

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 4096) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

/** The keys and password from the data dir (made at first start): read before the server listens. */
export async function devIssuerSecrets(dataDir: string): Promise<DevIssuerSecrets> {
  return { keys: await loadKeys(dataDir), password: loadPassword(dataDir) };
}

/**
 * The provider for `issuer` (`<the server's URL>/oidc`), with the console's redirect URIs on each
 * of `origins` (127.0.0.1 and localhost of the same port). Synchronous: made as soon as the server
 * knows its port, before it serves a request.
 */
export function createDevIssuer(options: { issuer: string; origins: string[]; secrets: DevIssuerSecrets }): DevIssuer {
  const { keys, password } = options.secrets;
  const configuration: Configuration = {
    clients: [
      {
        client_id: DEV_CLIENT_ID,
        token_endpoint_auth_method: 'none',
        application_type: 'web',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: options.origins.map((o) => `${o}/auth/callback`),
        post_logout_redirect_uris: options.origins.map((o) => `${o}/`),
        scope: SCOPE,
      },
    ],
    adapter: memoryAdapter(),
    jwks: { keys: keys.jwks },
    cookies: { keys: keys.cookieKeys },
    pkce: { required: () => true },
    scopes: ['openid', 'email'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // The person is their email (lowercased): `sub` and a verified `email`.
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, email: id, email_verified: true }),
    }),
    // The console is first-party: no consent screen; the grant covers its scopes and the API.
    loadExistingGrant: async (ctx) => {
      const session = ctx.oidc.session!;
      const client = ctx.oidc.client!;
      const existing = session.grantIdFor(client.clientId);
      if (existing) {
        const grant = await ctx.oidc.provider.Grant.find(existing);
        if (grant) return grant;
      }
      const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId! });
      grant.addOIDCScope(SCOPE);
      grant.addResourceScope(DEV_RESOURCE, 'api');
      await grant.save();
      return grant;
    },
    // Access tokens carry the person's email, so operators (OPERATORS) and invitations work with them.
    extraTokenClaims: async (_ctx, token) =>
      'accountId' in token && token.accountId ? { email: token.accountId, email_verified: true } : undefined,
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => DEV_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'api',
          audience: DEV_AUDIENCE,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 3600,
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    interactions: {
      url: (_ctx: KoaContextWithOIDC, interaction) => `${DEV_ISSUER_PATH}/interaction/${interaction.uid}`,
    },
    // Only the console's own pages call the token endpoint from a browser.
    clientBasedCORS: (_ctx, origin) => options.origins.includes(origin),
    ttl: {
      AccessToken: 3600,
      Session: 12 * 3600,
      Grant: 12 * 3600,
      Interaction: 600,
      AuthorizationCode: 60,
      IdToken: 3600,
    },
  };
  const provider = new Provider(options.issuer, configuration);
  const PAGE_HEADERS = pageHeaders(options.origins);
  const callback = provider.callback();

  async function interaction(req: IncomingMessage, res: ServerResponse, uid: string, action: string | undefined) {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new Error('interaction mismatch');
    if (details.prompt.name !== 'login') {
      // Consent is given by loadExistingGrant: nothing for the person to do.
      return provider.interactionFinished(req, res, {}, { mergeWithLastSubmission: true });
    }
    if (req.method === 'GET' && !action) {
      res.writeHead(200, PAGE_HEADERS);
      return res.end(loginPage(uid));
    }
    if (req.method === 'POST' && action === 'login') {
      const form = await readForm(req);
      const email = (form.get('email') ?? '').trim().toLowerCase();
      if (!EMAIL.test(email)) {
        res.writeHead(400, PAGE_HEADERS);
        return res.end(loginPage(uid, 'Enter an email address.', email));
      }
      if (!sameSecret(form.get('password') ?? '', password)) {
        res.writeHead(401, PAGE_HEADERS);
        return res.end(loginPage(uid, 'That is not the development password.', email));
      }
      return provider.interactionFinished(
        req,
        res,
        { login: { accountId: email } },
        { mergeWithLastSubmission: false },
      );
    }
    res.writeHead(405, { 'content-type': 'text/plain' });
    res.end('Method Not Allowed');
  }

  return {
    issuer: options.issuer,
    clientId: DEV_CLIENT_ID,
    audience: DEV_AUDIENCE,
    password,
    handle(req, res) {
      const path = (req.url ?? '/').split('?')[0]!;
      const m = new RegExp(`^${DEV_ISSUER_PATH}/interaction/([A-Za-z0-9_-]{1,64})(?:/(login))?$`).exec(path);
      if (m) {
        interaction(req, res, m[1]!, m[2]).catch(() => {
          if (res.headersSent) return res.destroy();
          res.writeHead(400, PAGE_HEADERS);
          res.end(
            '<!doctype html><title>Sign-in expired</title><p>This sign-in has expired or was started in another browser. Go back to the console and start again.</p>',
          );
        });
        return;
      }
      // Mounted under the issuer's path: the provider sees the rest, and builds its URLs with the prefix.
      const mounted = req as IncomingMessage & { originalUrl?: string };
      mounted.originalUrl = req.url;
      req.url = (req.url ?? '/').slice(DEV_ISSUER_PATH.length) || '/';
      callback(req, res);
    },
  };
}
