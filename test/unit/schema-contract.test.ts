import { describe, expect, it } from 'vitest';
import { openApiDocument } from '#shared/http/openapi.ts';
import type { Operation } from '#shared/http/operation.ts';
import { handle, type ApiEvent } from '#shared/http/wrapper.ts';
import { operations } from '#shared/operations.ts';
import type { Services } from '#shared/services.ts';

/**
 * The public contract as bytes: the OpenAPI document, and what every route's validation answers to a
 * corpus of good and bad input (status and body, 422 issues included). Both are fixtures: a change of
 * schema library or of a schema shows here as a diff to review (`npx vitest run -u` accepts it).
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

const services = { sandboxBridge: { admitted: async () => ({ id: 'abc123' }) } } as unknown as Services;
const ctxAuth = { userId: 'alice' };

async function answer(
  op: Operation,
  input: { params?: Record<string, string>; query?: Record<string, string | string[]>; body?: unknown },
) {
  const echo: Operation = {
    route: op.route,
    schemas: op.schemas,
    run: async ({ body, query, params }) => ({ body, query, params }),
  };
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(input.query ?? {})) for (const one of [v].flat()) query.append(k, one);
  const event = {
    headers: { 'content-type': 'application/json' },
    body: input.body === undefined ? undefined : JSON.stringify(input.body),
    pathParameters: input.params,
    rawQueryString: query.toString(),
    requestContext: { requestId: 'r', authorizer: { lambda: ctxAuth } },
  } as unknown as ApiEvent;
  const res = await handle(echo, event, services);
  return { status: res.statusCode, body: JSON.parse(res.body ?? 'null') as unknown };
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
      const method = (
        doc.paths[op.route.path] as Record<
          string,
          {
            parameters: { name: string; in: string; schema: Json }[];
            requestBody?: { content: { 'application/json': { schema: Json } } };
          }
        >
      )[op.route.method.toLowerCase()]!;
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
      for (const c of cases)
        lines.push(JSON.stringify({ route: op.route.id, sent: c, got: await answer(op, c) }, short));
    }
    await expect(`${lines.join('\n')}\n`).toMatchFileSnapshot('../fixtures/contract/answers.jsonl');
  });
});
