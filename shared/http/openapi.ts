import * as z from 'zod';
import type { RouteDef } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';

const errorSchema = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
} as const;

const validationErrorSchema = {
  type: 'object',
  properties: {
    detail: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          type: { type: 'string' },
          loc: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
          msg: { type: 'string' },
          input: {},
        },
        required: ['type', 'loc', 'msg'],
      },
    },
  },
  required: ['detail'],
} as const;

const schemaOf = (s: z.ZodType, io: 'input' | 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

/** Query and path schemas become one parameter per member. */
function parameters(route: RouteDef) {
  const out: object[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const json = schemaOf(schema, 'input') as { properties?: Record<string, object>; required?: string[] };
    for (const [name, s] of Object.entries(json.properties ?? {})) {
      out.push({ name, in: where, required: where === 'path' || (json.required ?? []).includes(name), schema: s });
    }
  }
  return out;
}

/** The OpenAPI 3.1 document, generated from the route table and its zod schemas. */
export function openApiDocument(serverUrl?: string) {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes as readonly RouteDef[]) {
    const responses: Record<string, object> = {
      [String(route.status ?? 200)]: {
        description: 'Success',
        content: { 'application/json': { schema: route.response ? schemaOf(route.response, 'output') : {} } },
      },
    };
    if (route.auth === 'user' || route.auth === 'sandbox') {
      responses['401'] = { description: 'Missing, unknown or revoked key', content: { 'application/json': { schema: errorSchema } } };
    }
    if (route.body || route.query || route.params) {
      responses['422'] = { description: 'Invalid input', content: { 'application/json': { schema: validationErrorSchema } } };
    }
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      operationId: route.id,
      summary: route.summary,
      tags: [route.tag],
      security: route.auth === 'none' ? [] : [{ sessionApiKey: [] }, { bearer: [] }],
      parameters: parameters(route),
      ...(route.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOf(route.body, 'input') } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Conversation Service',
      version: '1.0.0',
      description: 'Settings, conversations with an AI coding agent, and the sandboxes they run in.',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    components: {
      securitySchemes: {
        sessionApiKey: { type: 'apiKey', in: 'header', name: 'X-Session-API-Key' },
        bearer: { type: 'http', scheme: 'bearer' },
      },
    },
    paths,
  };
}

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** A self-contained page (no CDN, works offline) listing every operation with its schemas. */
export function docsPage(): string {
  const doc = openApiDocument();
  const sections = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => {
      const o = op as { summary: string; security: unknown[]; operationId: string };
      return `<details id="${escape(o.operationId)}"><summary><b class="m ${method}">${method.toUpperCase()}</b> <code>${escape(path)}</code> ${escape(o.summary)}${o.security.length ? ' 🔑' : ''}</summary><pre>${escape(JSON.stringify(op, null, 2))}</pre></details>`;
    }),
  );
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(doc.info.title)} API</title>
<style>body{font:15px system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em}details{border:1px solid #ddd;border-radius:6px;margin:.4em 0;padding:.4em .8em}pre{overflow:auto;background:#f6f8fa;padding:.8em;font-size:12px}.m{display:inline-block;min-width:4em}.get{color:#0969da}.post{color:#1a7f37}.delete{color:#cf222e}</style></head>
<body><h1>${escape(doc.info.title)}</h1><p>${escape(doc.info.description)} 🔑 marks operations that need a key in <code>X-Session-API-Key</code> or <code>Authorization: Bearer</code>. The machine-readable document is at <a href="openapi.json">openapi.json</a>.</p>
${sections.join('\n')}</body></html>`;
}
