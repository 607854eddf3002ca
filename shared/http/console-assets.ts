import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The files of a console build (infra/console-build.ts writes them). */
export const CONSOLE_FILES = { script: 'app.js', style: 'app-style.css', manifest: 'manifest.json' } as const;
/** The assets `/assets/{file}` serves, with their types. */
const ASSETS: Record<string, string> = {
  [CONSOLE_FILES.script]: 'text/javascript; charset=utf-8',
  [CONSOLE_FILES.style]: 'text/css; charset=utf-8',
};
/** Where a Lambda bundle carries the build (infra/bundle.ts copies it next to the bundle). */
export const BUNDLED_CONSOLE_DIR = 'console';

export interface ConsoleManifest {
  /** Hash of the built files: the page asks for `assets/app.js?v=<version>`, so a new build is never served from a stale cache. */
  version: string;
  scriptBytes: number;
  scriptGzipBytes: number;
}

const here = dirname(fileURLToPath(import.meta.url));
/** On AWS the build is beside the bundle; locally it is the checkout's `.build/console` (npm start builds it first). */
const bundled = existsSync(join(here, BUNDLED_CONSOLE_DIR));
const dir = bundled ? join(here, BUNDLED_CONSOLE_DIR) : join(here, '..', '..', '.build', 'console');

// A Lambda container's files never change: read once. Locally a rebuild under a running server is picked up.
const cache = new Map<string, string>();
function read(file: string): string | undefined {
  const cached = cache.get(file);
  if (cached !== undefined) return cached;
  let body: string;
  try {
    body = readFileSync(join(dir, file), 'utf8');
  } catch {
    return undefined;
  }
  if (bundled) cache.set(file, body);
  return body;
}

export function consoleManifest(): ConsoleManifest | undefined {
  const text = read(CONSOLE_FILES.manifest);
  return text ? (JSON.parse(text) as ConsoleManifest) : undefined;
}

export function consoleAsset(name: string): { body: string; contentType: string } | undefined {
  if (!Object.hasOwn(ASSETS, name)) return undefined;
  const body = read(name);
  return body === undefined ? undefined : { body, contentType: ASSETS[name]! };
}

/**
 * The headers of every console response. The console shows what agents, repositories and LLMs wrote
 * on the origin that holds the user's session, so: scripts and styles from this origin only (no
 * inline script, no eval), fetches and the event stream to this origin only (`'self'` plus the
 * ws/wss scheme of this host, which older browsers do not count as `'self'`), images from here or
 * `data:` (a markdown image cannot call out with the page's data), the OpenID issuer's origin for the
 * code redemption of sign-in (console/src/oidc.ts), no plugins, no framing, no
 * `<base>`, forms only to here, and Trusted Types: only DOMPurify's output may reach an HTML sink.
 */
export function consoleHeaders(baseUrl: string): Record<string, string> {
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    connectSources(baseUrl),
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
    // Trusted Types: HTML sinks (innerHTML...) take only what DOMPurify's policy made.
    "require-trusted-types-for 'script'",
    'trusted-types dompurify',
  ].join('; ');
  return {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}

/**
 * `'self'` and the ws/wss scheme of this host. The host comes from `PUBLIC_BASE_URL` or the request's
 * Host header, which a client writes: anything but a plain host name and port is left out, so no
 * one can write directives into the policy (nor make the page fail).
 */
function connectSources(baseUrl: string): string {
  let host = '';
  try {
    host = new URL(baseUrl).host;
  } catch {
    // Not a URL: 'self' alone.
  }
  const issuer = issuerOrigin();
  return /^([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$/.test(host)
    ? `connect-src 'self' ws://${host} wss://${host}${issuer}`
    : `connect-src 'self'${issuer}`;
}

/**
 * Where the page redeems its sign-in code (console/src/oidc.ts): the configured OpenID issuer's origin
 * (OIDC_ISSUER; locally the development provider, another origin when the page is opened on `localhost`
 * rather than 127.0.0.1) and OIDC_CONNECT_ORIGINS (on AWS the stack sets it on the console's functions:
 * Cognito's hosted domain, or the external issuer's origin). Operator configuration, and still only
 * plain http(s) origins are written into the policy.
 */
function issuerOrigin(): string {
  const origins = new Set<string>();
  for (const value of [process.env.OIDC_ISSUER ?? '', ...(process.env.OIDC_CONNECT_ORIGINS ?? '').split(',')]) {
    try {
      const url = new URL(value.trim());
      if (/^https?:$/.test(url.protocol) && /^[A-Za-z0-9.:[\]-]+$/.test(url.host)) origins.add(url.origin);
    } catch {
      // Not a URL: left out.
    }
  }
  return [...origins].map((o) => ` ${o}`).join('');
}

/**
 * `/`: the console's page; every path is relative, so it works under any base URL. `session`: the request
 * carried a session cookie, which the page (that cannot read an HttpOnly cookie) learns from `data-session`:
 * without one it shows the sign-in form at once, with no request that a first visit would see fail.
 */
export function consolePage(session = false, prefix = ''): string | undefined {
  const manifest = consoleManifest();
  if (!manifest) return undefined;
  const v = encodeURIComponent(manifest.version);
  return `<!doctype html>
<html lang="en"${session ? ' data-session' : ''}><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent Conversation Service</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="${prefix}assets/${CONSOLE_FILES.style}?v=${v}">
<script type="module" src="${prefix}assets/${CONSOLE_FILES.script}?v=${v}"></script></head>
<body><div id="app"><noscript>The console needs JavaScript. The API works without it: see <a href="docs">/docs</a>.</noscript></div></body></html>`;
}
