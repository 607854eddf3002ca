/**
 * Names of fields whose values are secrets. Used to mask validation echoes and log attributes, so
 * a secret can reach neither a response nor a log line even when it arrives in the wrong place.
 */
const SECRET_KEY = /(api_?key|token|secret|password|authorization|env|session_api_key|enrollment)/i;

export const MASK = '**********';

export const isSecretKey = (key: string | number): boolean =>
  typeof key === 'string' && SECRET_KEY.test(key);

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
