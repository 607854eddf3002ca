import * as z from '#shared/zod.ts';
import type { Operation } from '#shared/http/operation.ts';
import type { RouteDef, RouteSchemas } from '#shared/http/route.ts';
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

const schemaOf = (s: z.core.$ZodType, io: 'input' | 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

/** Query and path schemas become one parameter per member. */
function parameters(route: RouteSchemas) {
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

/**
 * The OpenAPI 3.1 document, generated from the route table and each route's schemas: its
 * operation's, or (for an entry without one in `operations`) those the table entry declares.
 */
export function openApiDocument(operations: readonly Operation[], serverUrl?: string) {
  const paths: Record<string, Record<string, object>> = {};
  const schemasOf = new Map(operations.map((op) => [op.route.id, op.schemas]));
  for (const entry of routes as readonly RouteDef[]) {
    const route = { ...entry, ...schemasOf.get(entry.id) };
    const responses: Record<string, object> = {
      [String(route.status ?? 200)]: {
        description: 'Success',
        content: { 'application/json': { schema: route.response ? schemaOf(route.response, 'output') : {} } },
      },
    };
    if (route.auth === 'user' || route.auth === 'sandbox' || route.auth === 'standby') {
      responses['401'] = {
        description: 'Missing, unknown or revoked key',
        content: { 'application/json': { schema: errorSchema } },
      };
    }
    if (route.auth === 'user') {
      responses['403'] = {
        description: route.conversationKey
          ? 'A conversation key of another conversation, or a cross-site request signed in with the session cookie'
          : "A conversation key (valid only on its conversation's routes), or a cross-site request signed in with the session cookie",
        content: { 'application/json': { schema: errorSchema } },
      };
    }
    if (route.body || route.query || route.params) {
      responses['422'] = {
        description: 'Invalid input',
        content: { 'application/json': { schema: validationErrorSchema } },
      };
    }
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      operationId: route.id,
      summary: route.summary,
      ...(route.conversationKey
        ? {
            description:
              "Also accepts the conversation's own `session_api_key` (a conversation-scoped key) as the key.",
          }
        : {}),
      tags: [route.tag],
      security:
        route.auth === 'none'
          ? []
          : [{ sessionApiKey: [] }, { bearer: [] }, ...(route.auth === 'user' ? [{ sessionCookie: [] }] : [])],
      parameters: parameters(route),
      ...(route.body
        ? {
            requestBody: { required: true, content: { 'application/json': { schema: schemaOf(route.body, 'input') } } },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Conversation Service',
      version: '1.0.0',
      description:
        'Settings, conversations with an AI coding agent, and the sandboxes they run in. Live events: a WebSocket at ' +
        '`/sockets/events/{conversation_id}?resend_all=true` (one event per message with its `seq`; `after_seq=N` resumes), ' +
        "opened with the session cookie, the conversation's `session_api_key` in the query, or a `ticket` from " +
        '`POST /api/v1/app-conversations/{conversation_id}/stream-tickets`; never a user API key in the URL.',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    components: {
      securitySchemes: {
        sessionApiKey: { type: 'apiKey', in: 'header', name: 'X-Session-API-Key' },
        bearer: { type: 'http', scheme: 'bearer' },
        // `__Host-acs_session` when served over https (see shared/auth/sessions.ts).
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'acs_session' },
      },
    },
    paths,
  };
}
