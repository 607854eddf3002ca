/**
 * Names of fields whose values are secrets. Used to mask validation echoes and log attributes, so
 * a secret can reach neither a response nor a log line even when it arrives in the wrong place.
 */
const SECRET_KEY = /(api_?key|token|secret|password|authorization|env|session_api_key|enrollment)/i;

export const MASK = '**********';

export const isSecretKey = (key: string | number): boolean => typeof key === 'string' && SECRET_KEY.test(key);

/** Deep copy of `value` with every member under a secret-named key replaced by the mask. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 20 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return { name: value.name, message: value.message };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = isSecretKey(k) && v !== null && v !== undefined && v !== '' ? MASK : redact(v, depth + 1);
  }
  return out;
}

/**
 * Credentials that may sit inside an ordinary-looking string: URL userinfo (`http://user:key@host`),
 * secret-named query parameters, `Bearer`/`Basic` credentials and the prefixes of well-known tokens.
 */
const SECRET_TEXT: [RegExp, string][] = [
  [/(\b[a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/gi, `$1${MASK}@`],
  [
    /([?&;](?:[a-z_-]*(?:key|token|secret|password|passwd|pwd|sig|signature|auth|credential)[a-z_-]*)=)[^&#\s]*/gi,
    `$1${MASK}`,
  ],
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{4,}/gi, `$1 ${MASK}`],
  [/\b(sk-|sk_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|enr_|sbx_)[A-Za-z0-9_-]{6,}/g, MASK],
];

/** `text` with every credential-looking part replaced by the mask. */
export function scrubText(text: string): string {
  for (const [pattern, replacement] of SECRET_TEXT) text = text.replace(pattern, replacement);
  return text;
}

/** `redact` plus `scrubText` on every string: what a response may echo of a client's input. */
export function scrub(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (depth > 20 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[scrubText(k)] = isSecretKey(k) && v !== null && v !== undefined && v !== '' ? MASK : scrub(v, depth + 1);
  }
  return out;
}
