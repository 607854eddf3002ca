import fc from 'fast-check';
import * as z from '#shared/zod.ts';
import type { RouteDef, RouteSchemas } from '#shared/http/route.ts';
import { operations } from '#shared/operations.ts';
import { routes } from '#shared/routes.ts';

/**
 * Fuzz over every route of the table, against any base URL: the local `npm start` stack here, the
 * tier's emulated API elsewhere. Everything a hostile client controls varies: method, path ids,
 * query, body (depth, size, unicode, wrong types, broken JSON, bytes), content type and key.
 */
export interface FuzzTarget {
  baseUrl: string;
  /** A valid user API key. */
  userKey: string;
  /** A sandbox of that user and its session key, when the target has one. */
  sandbox?: { id: string; key: string };
  /** Ids that exist (conversations, start tasks, other users' sandboxes...), so some requests reach real records. */
  knownIds?: string[];
}

export interface FuzzOptions {
  requests: number;
  concurrency: number;
  seed: number;
  /** Sees every response (e.g. to sweep bodies for secrets). */
  onResponse?: (res: Response, body: string) => void;
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  route: string;
}

export interface FuzzResult {
  sent: number;
  byStatus: Record<number, number>;
  /** Every 5xx, with what was sent (bodies cut). */
  serverErrors: { request: string; status: number; body: string }[];
  /** Requests fetch itself refused or that failed on the wire (never a server answer). */
  transportErrors: { request: string; error: string }[];
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
const nested = (open: string, inner: string, close: string) => (n: number) =>
  `${open.repeat(n)}${inner}${close.repeat(n)}`;

/** Text of every kind: short, unicode, long beyond any key limit, control characters, numbers. */
const textArb = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer({ min: 200, max: 9000 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 100, max: 1000 }).map((n) => '\u{1F600}'.repeat(n)),
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1e309',
    'NaN',
    'null',
    'true',
    '[]',
    '{}',
    '../../etc/passwd',
    '%00',
    '\u0000',
    'a'.repeat(2049),
    '\uD800',
  ),
  fc.double().map(String),
);

function idArb(known: string[]) {
  return fc.oneof(
    { weight: 2, arbitrary: known.length ? fc.constantFrom(...known) : fc.constant('x') },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.replaceAll('-', '')) },
    { weight: 3, arbitrary: textArb },
  );
}

/** encodeURIComponent, which throws on a lone surrogate: that one goes as its (invalid) UTF-8 bytes. */
function encodeSegment(v: string): string {
  try {
    return encodeURIComponent(v) || 'x';
  } catch {
    return '%ED%A0%80';
  }
}

/** A segment as it goes into a path: encoded, or deliberately broken percent-escapes. */
const segmentArb = (known: string[]) =>
  fc.oneof(
    { weight: 6, arbitrary: idArb(known).map(encodeSegment) },
    { weight: 1, arbitrary: fc.constantFrom('%zz', '%C0%AF', '%E0%A4%A', '%2F..%2F', '%00') },
  );

/** The members an object schema names (schemas are mostly `z.lazy`, built on first use). */
function memberNames(schema: z.core.$ZodType | undefined): string[] {
  const inner = schema instanceof z.core.$ZodLazy ? (schema._zod.innerType as z.core.$ZodType) : schema;
  return inner instanceof z.core.$ZodObject ? Object.keys(inner._zod.def.shape) : [];
}
/** A route-table entry with its operation's schemas. */
type FuzzRoute = RouteDef & RouteSchemas;
const queryNames = (route: FuzzRoute): string[] => memberNames(route.query);
const bodyNames = (route: FuzzRoute): string[] => memberNames(route.body);

const jsonish = fc.jsonValue({ maxDepth: 4 });
const wrongValue = fc.oneof(
  jsonish,
  textArb,
  fc.constant(null),
  fc.array(textArb, { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), jsonish, { maxKeys: 3 }),
);

function bodyArb(route: FuzzRoute) {
  const names = bodyNames(route);
  const fields = names.length
    ? fc
        .dictionary(fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 12 })), wrongValue, { maxKeys: 6 })
        .map((o) => JSON.stringify(o))
    : jsonish.map((v) => JSON.stringify(v));
  // Just over the route's size limit: rare, since each one is megabytes on the wire.
  const overLimit = JSON.stringify({ title: 'x'.repeat(route.maxBodyBytes ?? 1024 * 1024) });
  return fc.oneof(
    { weight: 30, arbitrary: fields },
    { weight: 10, arbitrary: jsonish.map((v) => JSON.stringify(v)) },
    {
      weight: 10,
      arbitrary: fc
        .integer({ min: 30, max: 120_000 })
        .chain((n) =>
          fc.constantFrom(
            nested('[', '', ']')(n),
            nested('{"a":', '1', '}')(n),
            `[${nested('{"x":[', '0', ']}')(n)}]`,
            `{"content":${nested('[', '"t"', ']')(n)}}`,
          ),
        ),
    },
    {
      weight: 5,
      arbitrary: fc.constantFrom(
        '',
        '{',
        '{"a":',
        'nul',
        '[1,]',
        '{"a":1}garbage',
        '\uFEFF{}',
        '"\\uD800"',
        '1e999999',
        '-0',
        '{"__proto__":{"x":1}}',
        '{"constructor":{"prototype":{}}}',
      ),
    },
    { weight: 4, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')) },
    { weight: 1, arbitrary: fc.constant(overLimit) },
  );
}

const contentTypeArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'text/plain',
      '',
      'application/x-www-form-urlencoded',
      'application/vnd.api+json',
      'multipart/form-data; boundary=x',
      'application/json\u00e9',
      'APPLICATION/JSON',
    ),
  },
);

function requestArb(target: FuzzTarget, route: FuzzRoute): fc.Arbitrary<FuzzRequest> {
  const known = [...(target.knownIds ?? []), ...(target.sandbox ? [target.sandbox.id] : [])];
  const names = [...route.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!);
  const keys = [target.userKey, target.sandbox?.key ?? target.userKey, null, 'garbage-key', 'x'.repeat(3000)];
  const queryArb = fc.oneof(
    {
      weight: 5,
      arbitrary: fc
        .array(
          fc.tuple(
            fc.oneof(
              fc.constantFrom(...(queryNames(route).length ? queryNames(route) : ['q'])),
              fc.string({ maxLength: 10 }),
            ),
            idArb(known),
          ),
          { maxLength: 5 },
        )
        .map((pairs) => new URLSearchParams(pairs).toString()),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'a=%zz',
        '&&=&',
        'limit=1e309&limit=2',
        `ids=${'a,'.repeat(500)}`,
        `id=${Array(150).fill('x').join('&id=')}`,
        'wait=-1',
        'wait=61',
        'wait=0.5',
        `page_id=${'A'.repeat(4000)}`,
      ),
    },
  );
  return fc
    .record({
      wrongMethod: fc.integer({ min: 0, max: 99 }).map((x) => x < 12),
      otherMethod: fc.constantFrom(...METHODS),
      segments: fc.tuple(...names.map(() => segmentArb(known))),
      query: fc.option(queryArb, { freq: 2 }),
      body: fc.option(bodyArb(route), { freq: route.body ? 12 : 2 }),
      contentType: contentTypeArb,
      key: fc.constantFrom(...keys),
      bearer: fc.boolean(),
    })
    .map((r) => {
      let path = route.path;
      for (const [i, n] of names.entries()) path = path.replace(`{${n}}`, r.segments[i]!);
      // A valid wait on the long-poll is a legitimate wait of up to 20 s: fuzz it with 0 only.
      let query = r.query ?? '';
      if (route.id === 'sandboxCommands')
        query = query.replace(/wait=(\d+)/g, (m, n) => (Number(n) >= 1 && Number(n) <= 60 ? 'wait=0' : m));
      const method = r.wrongMethod ? r.otherMethod : route.method;
      const headers: Record<string, string> = {};
      if (r.key !== null) {
        if (r.bearer) headers.authorization = `Bearer ${r.key}`;
        else headers['x-session-api-key'] = r.key;
      }
      const hasBody = r.body !== null && method !== 'GET' && method !== 'HEAD';
      if (hasBody && r.contentType) headers['content-type'] = r.contentType;
      return {
        method,
        path: query ? `${path}?${query}` : path,
        headers,
        ...(hasBody ? { body: r.body! } : {}),
        route: route.id,
      };
    });
}

/** The requests of one run: every route equally likely, then reproducible from the seed. */
export function fuzzRequests(target: FuzzTarget, count: number, seed: number): FuzzRequest[] {
  // Each entry with its operation's schemas, which say what the query and body hold.
  const schemasOf = new Map(operations.map((op) => [op.route.id, op.schemas]));
  const table: FuzzRoute[] = (routes as readonly RouteDef[]).map((route) => ({ ...route, ...schemasOf.get(route.id) }));
  const perRoute = new Map(table.map((route) => [route.id, requestArb(target, route)]));
  const arb = fc.constantFrom(...table).chain((route) => perRoute.get(route.id)!);
  return fc.sample(arb, { numRuns: count, seed });
}

const describe = (r: FuzzRequest) =>
  `${r.method} ${r.path.slice(0, 300)} [${r.route}] ${JSON.stringify(r.headers).slice(0, 200)} body=${(r.body ?? '').slice(0, 200)}${(r.body?.length ?? 0) > 200 ? `… (${r.body!.length} chars)` : ''}`;

/** Sends the run's requests, `concurrency` at a time over kept-alive connections; never throws on a status. */
export async function runFuzz(target: FuzzTarget, o: FuzzOptions): Promise<FuzzResult> {
  const queue = fuzzRequests(target, o.requests, o.seed);
  const result: FuzzResult = { sent: 0, byStatus: {}, serverErrors: [], transportErrors: [] };
  let next = 0;
  const worker = async () => {
    while (next < queue.length) {
      const r = queue[next++]!;
      try {
        const res = await fetch(`${target.baseUrl}${r.path}`, {
          method: r.method,
          headers: r.headers,
          body: r.body,
          signal: AbortSignal.timeout(60_000),
        });
        const text = await res.text();
        result.sent++;
        result.byStatus[res.status] = (result.byStatus[res.status] ?? 0) + 1;
        o.onResponse?.(res, text);
        if (res.status >= 500)
          result.serverErrors.push({ request: describe(r), status: res.status, body: text.slice(0, 500) });
      } catch (err) {
        result.transportErrors.push({
          request: describe(r),
          error: String((err as Error).cause ?? (err as Error).message),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  return result;
}
