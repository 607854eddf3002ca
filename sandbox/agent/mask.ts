import { secretForms } from '#sandbox/secret-forms.ts';

export const SECRET_MASK = '<secret hidden>';

/** Secrets shorter than this are left alone: masking "ab" would garble every text that contains it. */
export const MIN_MASKED_LENGTH = 4;

/** Members that hold identifiers and structure (`kind`, ids, ...), never user data: not rewritten. */
const STRUCTURAL = new Set(['kind', 'id', 'timestamp', 'source', 'action_id', 'tool_call_id', 'key']);

/**
 * Replaces every occurrence of the given secret values in the strings of a value (at any depth) with
 * `<secret hidden>`, in every form `secretForms` lists. Longest values first, so a secret that contains another is masked whole.
 */
export function secretMasker(values: Iterable<string>): <T>(value: T) => T {
  // Each value also in its URL-encoded and base64 forms (a Basic auth header, a token in a URL).
  const secrets = [...new Set([...values].flatMap(secretForms))]
    .filter((v) => v.length >= MIN_MASKED_LENGTH)
    .sort((a, b) => b.length - a.length);
  if (!secrets.length) return (v) => v;
  const maskText = (s: string) => {
    for (const secret of secrets) if (s.includes(secret)) s = s.split(secret).join(SECRET_MASK);
    return s;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return maskText(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, STRUCTURAL.has(k) ? x : walk(x)]));
    return v;
  };
  return <T>(value: T) => walk(value) as T;
}
