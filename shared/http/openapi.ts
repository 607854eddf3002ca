import * as z from '#shared/zod.ts';
import { IDEMPOTENCY_HEADER, KEEP_SECONDS } from '#shared/http/idempotency-key.ts';
import type { Operation } from '#shared/http/operation.ts';
import type { ErrorStatus, RouteDef, RouteSchemas } from '#shared/http/route.ts';
import { routes } from '#shared/routes.ts';

/** Where `npm start` serves the API; the served document names the host it was reached on instead. */
export const LOCAL_SERVER_URL = 'http://127.0.0.1:3000';

/** What each tag of the route table groups; a tag missing here gets a generic line (add one). */
const tagDescriptions: Record<string, string> = {
  service: 'Health, this document, the documentation page and the web console (no credentials)',
  settings: "The caller's settings: LLM, agent, sandbox, git identity, MCP servers, secrets (write-only)",
  options: 'The values settings accept, and what the OpenHands web UI reads first',
  users: 'The calling user',
  sandboxes: "The caller's sandboxes: start, pause, resume, delete",
  'sandbox-specs': 'The sandbox specs this deployment offers',
  conversations: 'Conversations with the agent (V1): start, list, search, talk to it, its start tasks',
  legacy: 'Conversations in the legacy (V0) shape the OpenHands web UI uses',
  events: "A conversation's events, and tickets for its live event stream",
  auth: 'Browser sign-in and sign-out (the session cookie)',
  keys: "The caller's API keys",
  bridge: "The sandbox program's calls (its own key): check in, heartbeat, commands, snapshots",
  canvas:
    "What Agent Canvas's cloud mode reads on load (settings, schemas, models, profiles, skills, a conversation's events)",
  // The tag keeps the word of its paths (`/api/v1/webhooks/...`, the OpenHands wire contract) and names the nested stack `Routes-webhooks`.
  webhooks:
    "The sandbox program's reports over the bridge (its own key): events, conversation status, start configuration",
};

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

/** A plan's refusal (SAAS-CONTRACTS.md: quota, spend, credits), `code` from the plans' enumeration. */
const planRefusalSchema = {
  type: 'object',
  properties: {
    detail: { type: 'string' },
    code: { type: 'string' },
    limit: { type: 'number' },
    used: { type: 'number' },
  },
  required: ['detail', 'code'],
} as const;

/** 429: this API's own limits answer `detail`; API Gateway's stage throttle answers `{"message": "Too Many Requests"}`. */
const tooManySchema = {
  anyOf: [errorSchema, { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }],
} as const;

const retryAfter = {
  description:
    "Seconds to wait before trying again (sent with every 429 and 409 this API answers itself; API Gateway's own stage throttle sends none: back off)",
  schema: { type: 'integer', minimum: 0 },
};

const json = (schema: object) => ({ 'application/json': { schema } });

/** Every error answer the wrapper (and the gateway in front of it) can give, as reusable responses. */
const errorResponses = {
  BadRequest: {
    description: 'Malformed JSON body, or a `page_id` this API did not issue',
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  Unauthorized: {
    description: 'No credentials, or an unknown, expired or revoked key, JWT or session',
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  PaymentRequired: {
    description: "Refused by the organization's plan (a quota, the month's spend, credits): `code` says which",
    content: json({ $ref: '#/components/schemas/PlanRefusal' }),
  },
  Forbidden: {
    description:
      "Valid credentials that may not do this: a conversation key outside its conversation's routes, or a cross-site request signed in with the session cookie",
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  NotFound: {
    description: 'No such record for the caller (another user\'s record is "not found" too)',
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  Conflict: {
    description:
      'The record is not in a state that allows this (or was changed concurrently: try again); on an idempotent create, a repeat whose first request is still in progress (retry after `Retry-After`)',
    headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  PayloadTooLarge: {
    description: "The body is larger than the route's limit (1 MiB unless the route says otherwise)",
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  UnsupportedMediaType: {
    description: 'The body is not `application/json`',
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  ValidationFailed: {
    description: 'Invalid input: one entry per bad field, `loc` naming it (`body`, `query`, `path` or `header`)',
    content: json({ $ref: '#/components/schemas/ValidationError' }),
  },
  BadGateway: {
    description: "The sandbox's answer was not a valid one (a workspace read over the bridge)",
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  GatewayTimeout: {
    description: 'The sandbox did not answer in time (a workspace read over the bridge waits at most 10 s)',
    content: json({ $ref: '#/components/schemas/Error' }),
  },
  TooManyRequests: {
    description: 'Too many requests: wait `Retry-After` seconds',
    headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
    content: json({ $ref: '#/components/schemas/TooManyRequests' }),
  },
} as const;
type ErrorResponse = keyof typeof errorResponses;

const byStatus: Record<number, ErrorResponse> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  402: 'PaymentRequired',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  422: 'ValidationFailed',
  429: 'TooManyRequests',
  502: 'BadGateway',
  504: 'GatewayTimeout',
};

/** The members of an object schema (empty for anything else). */
const membersOf = (schema: z.core.$ZodType | undefined): string[] =>
  schema
    ? Object.keys(
        ((z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: object }).properties ??
          {}) as object,
      )
    : [];

/**
 * The error statuses a route can answer, derived from its entry and schemas the way the wrapper
 * (shared/http/wrapper.ts) answers, plus those its operation declares (`errors`).
 */
export function errorStatuses(route: RouteDef, schemas: RouteSchemas): number[] {
  const out = new Set<number>([...(schemas.errors ?? [])] as ErrorStatus[]);
  if (schemas.body || membersOf(schemas.query).includes('page_id')) out.add(400);
  if (route.auth !== 'none') out.add(401);
  if (route.auth === 'user') out.add(403);
  if (schemas.params) out.add(404);
  if (route.idempotent) out.add(409);
  if (schemas.body) for (const s of [413, 415]) out.add(s);
  if (schemas.body || schemas.query || schemas.params || route.idempotent) out.add(422);
  // API Gateway's stage throttle answers any route with 429 on AWS; this API's own limits do too.
  out.add(429);
  return [...out].sort();
}

/** The JSON schema of a zod schema, without `$schema`, with `anyOf` alternatives that allow anything folded away. */
const schemaOf = (s: z.core.$ZodType, io: 'input' | 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return simplify(rest) as Record<string, unknown>;
};

/** `anyOf: [{}, ...]` is `{}` (a transform's output is unrepresentable: "any"). */
function simplify(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(simplify);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = simplify(v);
  const anyOf = out.anyOf as unknown[] | undefined;
  if (anyOf?.some((alt) => alt && typeof alt === 'object' && Object.keys(alt).length === 0)) delete out.anyOf;
  return out;
}

/** Query and path schemas become one parameter per member; an idempotent route also takes the header. */
function parameters(route: RouteDef, schemas: RouteSchemas) {
  const out: object[] = [];
  for (const [where, schema] of [
    ['path', schemas.params],
    ['query', schemas.query],
  ] as const) {
    if (!schema) continue;
    const json = schemaOf(schema, 'input') as { properties?: Record<string, object>; required?: string[] };
    for (const [name, s] of Object.entries(json.properties ?? {})) {
      out.push({ name, in: where, required: where === 'path' || (json.required ?? []).includes(name), schema: s });
    }
  }
  if (route.idempotent) out.push({ $ref: '#/components/parameters/IdempotencyKey' });
  return out;
}

/**
 * The OpenAPI 3.1 document, generated from the route table and each route's schemas: its
 * operation's (none for an entry without one in `operations`).
 * `serverUrl`: where this API is (the served document: the URL it was reached on, which on AWS is the
 * stack's PublicUrl); the local stack's by default.
 */
export function openApiDocument(operations: readonly Operation[], serverUrl = LOCAL_SERVER_URL) {
  const paths: Record<string, Record<string, object>> = {};
  const schemasOf = new Map(operations.map((op) => [op.route.id, op.schemas]));
  const used = new Set<ErrorResponse>();
  const tags = new Set<string>();
  for (const route of routes as readonly RouteDef[]) {
    const schemas: RouteSchemas = schemasOf.get(route.id) ?? {};
    const responses: Record<string, object> = {
      [String(route.status ?? 200)]: {
        description: 'Success',
        ...(route.idempotent
          ? {
              headers: {
                'Idempotent-Replayed': {
                  description: `\`true\` when this is the stored first answer to a request with the same ${IDEMPOTENCY_HEADER}`,
                  schema: { type: 'string', enum: ['true'] },
                },
              },
            }
          : {}),
        content: json(schemas.response ? schemaOf(schemas.response, 'output') : {}),
      },
    };
    for (const status of errorStatuses(route, schemas)) {
      const name = byStatus[status]!;
      used.add(name);
      responses[String(status)] = { $ref: `#/components/responses/${name}` };
    }
    tags.add(route.tag);
    const description = [
      route.conversationKey
        ? "Also accepts the conversation's own `session_api_key` (a conversation-scoped key) as the key."
        : '',
      route.idempotent
        ? `Idempotent with an \`${IDEMPOTENCY_HEADER}\` header: a repeat with the same key and body within 24 hours gets the first answer.`
        : '',
    ].filter(Boolean);
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = {
      operationId: route.id,
      summary: route.summary,
      ...(description.length ? { description: description.join(' ') } : {}),
      tags: [route.tag],
      security:
        route.auth === 'none'
          ? []
          : [{ sessionApiKey: [] }, { bearer: [] }, ...(route.auth === 'user' ? [{ sessionCookie: [] }] : [])],
      parameters: parameters(route, schemas),
      ...(schemas.body
        ? {
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: schemaOf(schemas.body, 'input'),
                  ...(schemas.example === undefined ? {} : { example: schemas.example }),
                },
              },
            },
          }
        : {}),
      responses,
    };
  }
  const usesSchema = (name: string) => [...used].some((r) => JSON.stringify(errorResponses[r]).includes(`/${name}"`));
  const componentSchemas = Object.fromEntries(
    Object.entries({
      Error: errorSchema,
      ValidationError: validationErrorSchema,
      PlanRefusal: planRefusalSchema,
      TooManyRequests: tooManySchema,
    }).filter(([name]) => usesSchema(name)),
  );
  const idempotent = (routes as readonly RouteDef[]).some((r) => r.idempotent);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Conversation Service',
      version: '1.0.0',
      description:
        'Settings, conversations with an AI coding agent, and the sandboxes they run in. Live events: a WebSocket at ' +
        '`/sockets/events/{conversation_id}?resend_all=true` (one event per message with its `seq`; `after_seq=N` resumes), ' +
        "opened with the session cookie, the conversation's `session_api_key` in the query, or a `ticket` from " +
        '`POST /api/v1/app-conversations/{conversation_id}/stream-tickets`; never a user API key in the URL. ' +
        'Errors are `{"detail": ...}`; lists page with `page_id` = the previous page\'s `next_page_id`. A typed ' +
        'TypeScript client: shared/client/ in the repository.',
      // The license of the repository (package.json).
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: serverUrl.replace(/\/+$/, ''), description: 'This API' }],
    tags: [...tags].sort().map((name) => ({ name, description: tagDescriptions[name] ?? `The ${name} routes` })),
    components: {
      securitySchemes: {
        sessionApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Session-API-Key',
          description:
            "An API key (user routes), a conversation's `session_api_key` (its own routes only) or a sandbox's own key (the bridge routes)",
        },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'The same keys as `Authorization: Bearer <key>`, or a JWT of the configured OpenID issuer',
        },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          // `acs_session_<port>` when served over plain http (see shared/auth/sessions.ts).
          name: '__Host-acs_session',
          description:
            'The browser session from `POST /api/authenticate`; writes with it must come from an allowed Origin',
        },
      },
      ...(idempotent
        ? {
            parameters: {
              IdempotencyKey: {
                name: IDEMPOTENCY_HEADER,
                in: 'header',
                required: false,
                description:
                  `Makes the create safe to retry: a repeat with the same key and body within ${KEEP_SECONDS / 3600} hours answers the first ` +
                  "answer (status and body, `Idempotent-Replayed: true`) and creates nothing; the same key with another body is 422; a repeat while the first is in progress is 409 with `Retry-After`. Keys are the caller's own (another user's equal key is another key). " +
                  'Only successful answers are kept. A UUID per logical request is the usual choice.',
                schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
                example: '4f3c2b1a-9d8e-4c7b-a6f5-e4d3c2b1a098',
              },
            },
          }
        : {}),
      headers: { RetryAfter: retryAfter },
      responses: Object.fromEntries([...used].sort().map((name) => [name, errorResponses[name]])),
      schemas: componentSchemas,
    },
    paths,
  };
}
