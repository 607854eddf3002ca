import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RouteDef } from '#shared/http/route.ts';
import { openApiDocument } from '#shared/http/openapi.ts';
import { operations } from '#shared/operations.ts';
import { matchRoute } from '#shared/http/router.ts';
import { routes } from '#shared/routes.ts';

const all = routes as readonly RouteDef[];
const root = new URL('../../', import.meta.url);

describe('the route table', () => {
  it('has unique ids and unique method+path pairs', () => {
    expect(new Set(all.map((r) => r.id)).size).toBe(all.length);
    expect(new Set(all.map((r) => `${r.method} ${r.path}`)).size).toBe(all.length);
  });

  it.each(all.map((r) => [r.id, r] as const))(
    '%s has a handler file exporting a handler wired to its operation',
    async (_id, route) => {
      expect(existsSync(new URL(route.entry, root)), route.entry).toBe(true);
      const mod = (await import(new URL(route.entry, root).href)) as {
        handler?: { wiring?: { operation?: { route: RouteDef } } };
      };
      expect(typeof mod.handler).toBe('function');
      expect(mod.handler?.wiring?.operation?.route).toBe(route);
    },
  );

  it("has its schemas in its operation: every route but the OpenAPI document's own is in `operations` once, as the operation its entry runs", async () => {
    const ids = operations.map((op) => op.route.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of all) {
      if (r.id === 'openapi') continue;
      const op = operations.find((o) => o.route.id === r.id);
      expect(op, r.id).toBeDefined();
      const mod = (await import(new URL(r.entry, root).href)) as { handler: { wiring: { operation: unknown } } };
      expect(mod.handler.wiring.operation, r.id).toBe(op);
    }
    // The validation the wrapper does comes from there: e.g. the settings body and the bridge's path ids.
    expect(operations.find((o) => o.route.id === 'saveSettings')!.schemas.body).toBeDefined();
    expect(operations.find((o) => o.route.id === 'sandboxCommandAck')!.schemas.params).toBeDefined();
  });

  it('is fully described by the OpenAPI document', () => {
    const doc = openApiDocument(operations);
    expect(doc.openapi).toBe('3.1.0');
    for (const r of all) {
      const op = (doc.paths[r.path] as Record<string, { operationId: string; security: unknown[] }> | undefined)?.[
        r.method.toLowerCase()
      ];
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      expect(op!.operationId).toBe(r.id);
      expect(op!.security.length > 0).toBe(r.auth !== 'none');
    }
    const count = Object.values(doc.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
    expect(count).toBe(all.length);
  });

  it('matches every path to its own route, and says 405 or 404 otherwise', () => {
    for (const r of all) {
      const path = r.path.replace(/\{[a-z_]+\}/g, 'abc123');
      const m = matchRoute(r.method, path);
      expect(m.kind === 'found' && m.route.id).toBe(r.id);
    }
    expect(matchRoute('GET', '/nope').kind).toBe('not-found');
    expect(matchRoute('PATCH', '/health')).toEqual({ kind: 'method-not-allowed', allowed: ['GET'] });
  });
});
