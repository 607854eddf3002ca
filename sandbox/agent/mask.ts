export const SECRET_MASK = '<secret hidden>';

/**
 * Replaces every occurrence of the given secret values in strings (at any depth of objects and
 * arrays, keys included) with `<secret hidden>`. Longest values first, so a secret that contains
 * another is masked whole.
 */
export function secretMasker(values: Iterable<string>): <T>(value: T) => T {
  const secrets = [...new Set(values)].filter((v) => v.length > 0).sort((a, b) => b.length - a.length);
  if (!secrets.length) return (v) => v;
  const maskText = (s: string) => {
    for (const secret of secrets) if (s.includes(secret)) s = s.split(secret).join(SECRET_MASK);
    return s;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return maskText(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [maskText(k), walk(x)]));
    return v;
  };
  return <T>(value: T) => walk(value) as T;
}
