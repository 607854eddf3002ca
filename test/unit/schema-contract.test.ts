import { randomUUID } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { errorStatuses, openApiDocument } from '#shared/http/openapi.ts';
import type { Operation } from '#shared/http/operation.ts';
import { handle, type ApiEvent } from '#shared/http/wrapper.ts';
import { operations } from '#shared/operations.ts';
import type { Services } from '#shared/services.ts';
import * as z from '#shared/zod.ts';

/**
 * The public contract as bytes: the OpenAPI document, and what every route's validation answers to a
 * corpus of good and bad input (status and body, 422 issues included). Both are fixtures: a change of
 * schema library or of a schema shows here as a diff to review (`npx vitest run -u` accepts it).
 * And the two agree: every answer the wrapper gives a route (the corpus, plus no credentials, a refusal,
 * a body too large, not JSON, malformed, a bad Idempotency-Key) has its status documented for that
 * operation, an error's body validates against the documented schema (ajv, JSON Schema 2020-12 as
 * OpenAPI 3.1 uses), and every status the document derives from the wrapper is one it was seen to answer.
 */
type Json = {
  type?: string | string[];
  properties?: Record<string, Json>;
  enum?: unknown[];
  format?: string;
  items?: Json;
  anyOf?: Json[];
};

const doc = openApiDocument(operations);

/** Values a client may send for a member: kinds it expects and kinds it does not. */
function valuesFor(schema: Json): unknown[] {
  const out: unknown[] = [
    null,
    true,
    0,
    1,
    -1,
    1.5,
    Number.POSITIVE_INFINITY, // what 1e309 parses to
    '',
    'a',
    'abc123',
    'x'.repeat(3000),
    [],
    {},
    { nested: 1 },
    ['a'],
  ];
  if (schema.enum) out.push(...schema.enum);
  if (schema.format === 'date-time') out.push('2024-01-02T03:04:05Z', '2024-01-02');
  if (schema.format === 'uri' || schema.format === 'url') out.push('https://example.com/x', 'ftp://x', 'not a url');
  for (const alt of schema.anyOf ?? []) if (alt.enum) out.push(...alt.enum);
  return out;
}

/** Objects that each set one member (at any depth up to three) to one value. */
function bodies(schema: Json, depth = 0): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const [name, member] of Object.entries(schema.properties ?? {})) {
    for (const v of valuesFor(member)) out.push({ [name]: v });
    if (depth < 2) for (const inner of bodies(member, depth + 1)) out.push({ [name]: inner });
  }
  return out;
}

/** Text values for a path or query member (they arrive as strings, repeated ones as arrays). */
function texts(schema: Json): (string | string[])[] {
  const out: (string | string[])[] = [
    '',
    'a',
    'abc123',
    '0',
    '1',
    '-1',
    '101',
    '1.5',
    'x'.repeat(3000),
    'true',
    '%00',
    ['a', 'b'],
  ];
  for (const v of [...(schema.enum ?? []), ...(schema.anyOf ?? []).flatMap((a) => a.enum ?? [])]) out.push(String(v));
  if (schema.format === 'date-time') out.push('2024-01-02T03:04:05Z', '2024-01-02');
  return out;
}

/** Long strings as their start and length, to keep the fixture readable. */
const short = (_key: string, v: unknown) =>
  typeof v === 'string' && v.length > 60 ? `${v.slice(0, 20)}…(${v.length})` : v;

const services = {
  sandboxBridge: { admitted: async () => ({ id: 'abc123' }) },
  warmPool: { admitted: async () => ({ id: 'sb_abc123' }) },
} as unknown as Services;
const ctxAuth = { userId: 'alice' };

interface Input {
  params?: Record<string, string>;
  query?: Record<string, string | string[]>;
  body?: unknown;
  /** The request as sent, when it is not JSON of `body`. */
  raw?: string;
  headers?: Record<string, string>;
  auth?: { userId: string; refusal?: string };
  /** A sandbox (or pool) route called with a key that is not the sandbox's (or standby's). */
  foreignSandboxKey?: boolean;
}
const refusingServices = {
  sandboxBridge: { admitted: async () => null },
  warmPool: { admitted: async () => null },
} as unknown as Services;

async function answer(op: Operation, input: Input) {
  const echo: Operation = {
    route: op.route,
    schemas: op.schemas,
    run: async ({ body, query, params }) => ({ body, query, params }),
  };
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(input.query ?? {})) for (const one of [v].flat()) query.append(k, one);
  const event = {
    headers: { 'content-type': 'application/json', ...input.headers },
    body: input.raw ?? (input.body === undefined ? undefined : JSON.stringify(input.body)),
    pathParameters: input.params,
    rawQueryString: query.toString(),
    requestContext: { requestId: 'r', authorizer: { lambda: input.auth ?? ctxAuth } },
  } as unknown as ApiEvent;
  const res = await handle(echo, event, input.foreignSandboxKey ? refusingServices : services);
  return { status: res.statusCode!, body: JSON.parse(res.body ?? 'null') as unknown, headers: res.headers ?? {} };
}

type Responses = Record<string, { $ref?: string; content?: Record<string, { schema: object }>; headers?: object }>;
const ajv = new Ajv2020({ strict: false });
const components = doc.components as unknown as {
  responses: Record<string, { content: Record<string, { schema: { $ref: string } }>; headers?: object }>;
  schemas: Record<string, object>;
};
/** The documented answer of an operation for a status, with its body schema resolved. */
function documented(op: Operation, status: number, d: { paths: Record<string, unknown> } = doc) {
  const responses = (d.paths[op.route.path] as Record<string, { responses: Responses }>)[op.route.method.toLowerCase()]!
    .responses;
  const response = responses[String(status)];
  if (!response) return undefined;
  const resolved = response.$ref ? components.responses[response.$ref.split('/').pop()!]! : response;
  const schema = (resolved.content?.['application/json']?.schema ?? {}) as { $ref?: string };
  return {
    headers: Object.keys(resolved.headers ?? {}),
    schema: schema.$ref ? components.schemas[schema.$ref.split('/').pop()!]! : schema,
  };
}

/** The wrapper's answers outside the schema corpus: credentials, body transport, the idempotency header. */
function wrapperCases(op: Operation, base: Input): Input[] {
  const out: Input[] = [];
  if (op.route.auth === 'user') {
    out.push({ ...base, auth: { userId: '' } });
    out.push({ ...base, auth: { userId: '', refusal: 'Cross-site request refused' } });
  }
  if (op.route.auth === 'sandbox' || op.route.auth === 'standby') out.push({ ...base, foreignSandboxKey: true });
  if (op.schemas.body) {
    out.push({ ...base, raw: 'x'.repeat((op.route.maxBodyBytes ?? 1024 * 1024) + 1) });
    out.push({ ...base, headers: { 'content-type': 'text/plain' } });
    out.push({ ...base, raw: '{"a": ' });
  }
  if (op.route.idempotent) out.push({ ...base, headers: { 'idempotency-key': 'not ascii ü' } });
  return out;
}

/** Members the schema accepts (each tried from a few id and number shapes), so the wrapper gets past them. */
function accepted(schema: z.core.$ZodType | undefined, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const candidates = [
    'abc123',
    '0123456789abcdef',
    '0123456789abcdef0123456789abcdef',
    randomUUID(),
    'org_0123456789abcdef01234567',
    'sb_0123456789abcdef0123456789abcdef',
    '1',
    '0',
    'a',
  ];
  for (const name of names) {
    const fits = (v: string) => {
      const parsed = schema && z.safeParse(schema, { ...out, [name]: v });
      return !parsed || parsed.success || !parsed.error.issues.some((i) => i.path[0] === name);
    };
    const value = candidates.find(fits);
    if (value !== undefined) out[name] = value;
  }
  return out;
}
const validParams = (op: Operation) =>
  accepted(
    op.schemas.params,
    (op.route.path.match(/\{(\w+)\}/g) ?? []).map((m) => m.slice(1, -1)),
  );
/** The query's required members, with values it accepts. */
function validQuery(op: Operation): Record<string, string> {
  if (!op.schemas.query) return {};
  const json = z.toJSONSchema(op.schemas.query, { io: 'input', unrepresentable: 'any' }) as { required?: string[] };
  return accepted(op.schemas.query, json.required ?? []);
}

/** Where the document and the wrapper's answers disagree, over every operation (or the named ones). */
async function disagreements(d: { paths: Record<string, unknown> }, only?: string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const op of operations) {
    if (only && !only.includes(op.route.id)) continue;
    const base: Input = { params: validParams(op), query: validQuery(op), body: op.schemas.body ? {} : undefined };
    const cases: Input[] = [base, { ...base, query: { ...base.query, page_id: 'forged' } }, ...wrapperCases(op, base)];
    if (op.schemas.body) cases.push({ ...base, body: { unknown_member: 1 } }, { ...base, body: [] });
    const seen = new Set<number>();
    for (const c of cases) {
      const got = await answer(op, c);
      seen.add(got.status);
      if (got.status < 400) continue;
      const documentedAs = documented(op, got.status, d);
      if (!documentedAs) {
        problems.push(`${op.route.id}: answers ${got.status}, not documented`);
        continue;
      }
      if (!ajv.validate(documentedAs.schema, got.body))
        problems.push(`${op.route.id} ${got.status}: ${JSON.stringify(got.body).slice(0, 200)} ${ajv.errorsText()}`);
      if (got.status === 429 && !got.headers['retry-after']) problems.push(`${op.route.id}: 429 without Retry-After`);
    }
    // Each status documented from the wrapper alone was answered (the others come from the operation or the gateway).
    const listed = (d.paths[op.route.path] as Record<string, { responses: Responses }>)[op.route.method.toLowerCase()]!
      .responses;
    // (A status the operation declares itself, e.g. a workspace file over its cap's 413, is its own to answer.)
    const own = new Set<number>(op.schemas.errors ?? []);
    for (const status of [401, 403, 413, 415])
      if (
        !seen.has(status) &&
        !own.has(status) &&
        (listed[String(status)] || errorStatuses(op.route, op.schemas).includes(status))
      )
        problems.push(`${op.route.id}: documents ${status}, never answered`);
  }
  return problems;
}

describe('the public contract', () => {
  it('keeps the OpenAPI document byte for byte', async () => {
    await expect(`${JSON.stringify(doc, null, 2)}\n`).toMatchFileSnapshot('../fixtures/contract/openapi.json');
  });

  it("keeps every route's answer to good and bad input", { timeout: 120_000 }, async () => {
    const lines: string[] = [];
    for (const op of operations) {
      const { params, query, body } = op.schemas;
      if (!params && !query && !body) continue;
      const documentedMethod = (
        doc.paths[op.route.path] as Record<
          string,
          {
            parameters: { name: string; in: string; schema: Json }[];
            requestBody?: { content: { 'application/json': { schema: Json } } };
          }
        >
      )[op.route.method.toLowerCase()]!;
      // Path and query members (an idempotent route's header parameter is a $ref, checked below).
      const method = { ...documentedMethod, parameters: documentedMethod.parameters.filter((p) => p.in) };
      const good = (where: string) =>
        Object.fromEntries(
          method.parameters.filter((p) => p.in === where).map((p) => [p.name, String(p.schema.enum?.[0] ?? 'abc123')]),
        );
      const base = { params: good('path'), body: body ? {} : undefined };
      const cases: { params?: Record<string, string>; query?: Record<string, string | string[]>; body?: unknown }[] = [
        base,
        { ...base, query: good('query') },
      ];
      for (const p of method.parameters) {
        for (const v of texts(p.schema)) {
          cases.push(
            p.in === 'path'
              ? { ...base, params: { ...base.params, [p.name]: v as string } }
              : { ...base, query: { [p.name]: v } },
          );
        }
      }
      if (body) {
        const schema = method.requestBody!.content['application/json'].schema;
        for (const b of [null, [], 'text', 1, { unknown_member: 1 }, ...bodies(schema)])
          cases.push({ ...base, body: b });
      }
      for (const c of cases) {
        const { status, body } = await answer(op, c);
        lines.push(JSON.stringify({ route: op.route.id, sent: c, got: { status, body } }, short));
      }
    }
    await expect(`${lines.join('\n')}\n`).toMatchFileSnapshot('../fixtures/contract/answers.jsonl');
  });

  it("documents every answer the wrapper gives each route, with the body's schema", { timeout: 120_000 }, async () => {
    expect(await disagreements(doc)).toEqual([]);
  });

  it('finds a disagreement: 415 left out of one operation, a schema that does not fit an answer', async () => {
    const copy = structuredClone(doc) as unknown as { paths: Record<string, any> };
    delete copy.paths['/api/keys'].post.responses['415'];
    copy.paths['/api/settings'].post.responses['413'] = {
      description: 'x',
      content: { 'application/json': { schema: { type: 'object', required: ['message'] } } },
    };
    expect(await disagreements(copy, ['createKey', 'saveSettings'])).toEqual([
      'createKey: answers 415, not documented',
      expect.stringMatching(/^saveSettings 413: .*must have required property 'message'/),
    ]);
  });
});
