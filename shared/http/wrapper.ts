import { clientAddress } from '#shared/http/client-address.ts';
import middy from '@middy/core';
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import * as z from '#shared/zod.ts';
import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import {
  ApiError,
  badRequest,
  forbidden,
  invalid,
  payloadTooLarge,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
  type ValidationIssue,
} from '#shared/http/errors.ts';
import { callerScheme } from '#shared/http/cors.ts';
import { idempotencyKeyOf, type StoredAnswer } from '#shared/http/idempotency-key.ts';
import { Reply, type Operation } from '#shared/http/operation.ts';
import { DEFAULT_MAX_BODY_BYTES, MAX_JSON_DEPTH, nestedDeeperThan } from '#shared/http/json-depth.ts';
import { parseQuery } from '#shared/http/query.ts';
import { isSecretKey, MASK, scrub } from '#shared/http/redact.ts';
import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { checkPrincipal } from '#shared/auth/scope.ts';
import { logger } from '#shared/logging.ts';
import type { SandboxRecord } from '#shared/sandboxes/sandbox-store.ts';
import type { StandbyRecord } from '#shared/sandboxes/pool-store.ts';
import type { Services } from '#shared/services.ts';

export type { AuthorizerContext };
export type ApiEvent = APIGatewayProxyEventV2WithLambdaAuthorizer<AuthorizerContext>;
export type ApiResult = APIGatewayProxyStructuredResultV2;
export type ApiHandler = (event: ApiEvent, context: Context) => Promise<ApiResult>;

export { DEFAULT_MAX_BODY_BYTES };
const INTERNAL_ERROR = { detail: 'Internal Server Error' };

function json(status: number, body: unknown, requestId: string, headers: Record<string, string> = {}): ApiResult {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
    body: JSON.stringify(body),
  };
}

function toResult(value: unknown, requestId: string, defaultStatus: number): ApiResult {
  if (!(value instanceof Reply)) return json(defaultStatus, value ?? null, requestId);
  // Bytes (a binary workspace file): base64, as API Gateway expects a binary answer from Lambda.
  if (Buffer.isBuffer(value.body))
    return {
      statusCode: value.status,
      headers: { 'x-request-id': requestId, ...value.headers },
      body: value.body.toString('base64'),
      isBase64Encoded: true,
    };
  if (
    typeof value.body === 'string' &&
    value.headers['content-type'] &&
    !value.headers['content-type'].includes('json')
  ) {
    return { statusCode: value.status, headers: { 'x-request-id': requestId, ...value.headers }, body: value.body };
  }
  return json(value.status, value.body ?? null, requestId, value.headers);
}

/** An answer as the idempotency table keeps it: status, headers but the request id, body. */
function stored(result: ApiResult): StoredAnswer {
  const { 'x-request-id': _drop, ...headers } = (result.headers ?? {}) as Record<string, string>;
  return { statusCode: result.statusCode ?? 200, headers, body: result.body ?? '' };
}

const withRequestId = (answer: StoredAnswer, requestId: string): ApiResult => ({
  ...answer,
  headers: { ...answer.headers, 'x-request-id': requestId },
});

/** Zod issues in the FastAPI shape, with any secret-named value masked, credentials scrubbed and long inputs cut. */
function toIssues(where: 'body' | 'query' | 'path', error: z.core.$ZodError): ValidationIssue[] {
  return error.issues.map((issue) => {
    const loc = [where, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
    const out: ValidationIssue = { type: issue.code, loc, msg: issue.message };
    if (issue.code === 'unrecognized_keys') out.msg = `Unknown field(s): ${issue.keys.join(', ')}`;
    if ('input' in issue && issue.input !== undefined) {
      const secret = loc.some(isSecretKey);
      const text = JSON.stringify(issue.input) ?? '';
      out.input = secret ? MASK : text.length > 200 ? scrub(`${text.slice(0, 200)}…`) : scrub(issue.input);
    }
    return out;
  });
}

function validate<S extends z.core.$ZodType | undefined>(
  where: 'body' | 'query' | 'path',
  schema: S,
  value: unknown,
): unknown {
  if (!schema) return undefined;
  const parsed = z.safeParse(schema, value, { reportInput: true });
  if (!parsed.success) throw invalid(toIssues(where, parsed.error));
  return parsed.data;
}

function readBody(event: ApiEvent, limit: number): unknown {
  const raw = event.body
    ? event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body
    : '';
  if (Buffer.byteLength(raw, 'utf8') > limit) throw payloadTooLarge(limit);
  if (raw.trim() === '') throw invalid([{ type: 'missing', loc: ['body'], msg: 'A JSON request body is required' }]);
  const type = (event.headers?.['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    throw unsupportedMediaType(
      `Content-Type must be application/json, not ${type ? `"${type.slice(0, 100)}"` : 'missing'}`,
    );
  }
  if (nestedDeeperThan(raw, MAX_JSON_DEPTH))
    throw badRequest(`JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(raw) as unknown;
  } catch (err) {
    // V8's message quotes the input, which may hold a secret: report only where it broke.
    const at = /position (\d+)/.exec(String((err as Error).message))?.[1];
    throw badRequest(`Malformed JSON body${at ? ` (at position ${at})` : ''}`);
  }
}

/**
 * The public base URL: `PUBLIC_BASE_URL` (e.g. a custom domain) or what the caller used. API Gateway
 * sets `x-forwarded-proto`, and so does the local gateway.
 */
function baseUrlOf(event: ApiEvent, headers: Record<string, string>): string {
  if (process.env.PUBLIC_BASE_URL) return process.env.PUBLIC_BASE_URL.replace(/\/+$/, '');
  const host = headers.host ?? event.requestContext?.domainName ?? 'localhost';
  return `${callerScheme(headers)}://${host}`;
}

/** Runs one operation on one event: auth check, parsing, validation, error mapping, a log line. */
export async function handle(op: Operation, event: ApiEvent, services: Services): Promise<ApiResult> {
  const requestId = event.requestContext?.requestId ?? 'unknown';
  const { route, schemas } = op;
  const started = performance.now();
  const auth = route.auth === 'user' ? event.requestContext?.authorizer?.lambda : undefined;
  const userId = auth?.userId ?? '';
  let result: ApiResult;
  try {
    if (route.auth === 'user' && !userId)
      throw !auth?.refusal
        ? unauthorized()
        : auth.refusalStatus === 401
          ? unauthorized(auth.refusal)
          : auth.refusalStatus === 429
            ? tooManyRequests(auth.refusal, auth.retryAfter)
            : forbidden(auth.refusal);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = v;
    // Payload 2.0 moves cookies out of the headers.
    if (event.cookies?.length) headers.cookie = event.cookies.join('; ');
    event.headers = headers;
    const params = validate('path', schemas.params, event.pathParameters ?? {});
    // A sandbox route reads nothing of its input before the key is known to belong to that sandbox.
    let sandbox: SandboxRecord | undefined;
    if (route.auth === 'sandbox') {
      const sandboxId = (params as { sandbox_id: string }).sandbox_id;
      sandbox =
        (await services.sandboxBridge.admitted(sandboxId, keyFromHeaders(headers), route.sandboxKey ?? 'session')) ??
        undefined;
      if (!sandbox) throw unauthorized();
    }
    // A pool route: the standby's pool credential, checked against its item before anything else is read.
    let standby: StandbyRecord | undefined;
    if (route.auth === 'standby') {
      const standbyId = (params as { standby_id: string }).standby_id;
      standby = (await services.warmPool.admitted(standbyId, keyFromHeaders(headers))) ?? undefined;
      if (!standby) throw unauthorized();
    }
    const query = validate('query', schemas.query, parseQuery(event.rawQueryString));
    checkPrincipal(route, auth, params, query);
    const rawBody = schemas.body ? readBody(event, route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES) : undefined;
    const body = validate('body', schemas.body, rawBody);
    const idempotencyKey = route.idempotent ? idempotencyKeyOf(headers) : undefined;
    const execute = async () => {
      const value = await op.run(
        {
          body,
          rawBody,
          query,
          params,
          userId,
          auth: auth ?? { userId: '' },
          requestId,
          headers,
          clientAddress: clientAddress(headers, event.requestContext?.http?.sourceIp),
          baseUrl: baseUrlOf(event, headers),
          sandbox,
          standby,
        } as never,
        services,
      );
      return toResult(value, requestId, route.status ?? 200);
    };
    // An idempotent create with a key: the first answer, stored (without its request id), or a replay of it.
    result = idempotencyKey
      ? withRequestId(
          await services.idempotency.run(
            { route: route.id, userId, key: idempotencyKey, sealed: route.managesCredentials },
            { query, body: rawBody },
            async () => stored(await execute()),
          ),
          requestId,
        )
      : await execute();
  } catch (err) {
    if (err instanceof ApiError) {
      // Every 429 says when to try again, whoever made it (the contracts page; clients wait on it).
      const headers = err.status === 429 ? { 'retry-after': '1', ...err.headers } : err.headers;
      result = json(err.status, err.body, requestId, headers);
    } else {
      logger.error('Unhandled error', { requestId, route: route.id, error: err as Error });
      result = json(500, INTERNAL_ERROR, requestId);
    }
  }
  logger.info('request', {
    requestId,
    route: route.id,
    method: route.method,
    path: route.path,
    status: result.statusCode,
    userId: userId || undefined,
    durationMs: Math.round((performance.now() - started) * 10) / 10,
  });
  return result;
}

/** The Lambda handler for an operation, with its services built once per container. */
export function lambdaHandler(op: Operation, services: () => Services): ApiHandler {
  return middy<ApiEvent, ApiResult>()
    .use({
      onError: async (request) => {
        // handle() catches everything; this is the net under middy itself.
        logger.error('Unhandled error in middleware', { error: request.error as Error });
        request.response = json(500, INTERNAL_ERROR, request.event?.requestContext?.requestId ?? 'unknown');
      },
    })
    .handler(async (event) => handle(op, event, services()));
}
