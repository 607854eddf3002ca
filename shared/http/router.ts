import type { Method, RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';

interface Compiled {
  route: RouteDef;
  pattern: RegExp;
  names: string[];
}

const compiled: Compiled[] = routes.map((route) => {
  const names: string[] = [];
  const source = route.path
    .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
    .replace(/\\?\{([a-z_]+)\\?\}|\{([a-z_]+)\}/g, (_m, a, b) => {
      names.push(a ?? b);
      return '([^/]+)';
    });
  return { route, pattern: new RegExp(`^${source}$`), names };
});

export type Match =
  | { kind: 'found'; route: RouteDef; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: Method[] }
  | { kind: 'not-found' };

/** Finds the route for a request path (no query), as API Gateway would. */
export function matchRoute(method: string, path: string): Match {
  const allowed: Method[] = [];
  for (const { route, pattern, names } of compiled) {
    const m = pattern.exec(path);
    if (!m) continue;
    if (route.method !== method.toUpperCase()) {
      allowed.push(route.method);
      continue;
    }
    const params: Record<string, string> = {};
    try {
      for (const [i, n] of names.entries()) params[n] = decodeURIComponent(m[i + 1]!);
    } catch {
      return { kind: 'not-found' };
    }
    return { kind: 'found', route, params };
  }
  return allowed.length ? { kind: 'method-not-allowed', allowed } : { kind: 'not-found' };
}
