import { clientAddress, VIEWER_ADDRESS_HEADER } from '#shared/http/client-address.ts';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { authorizeRequest, type AuthorizerContext } from '#shared/auth/authorizer.ts';
import { oidcVerifier } from '#shared/auth/oidc.ts';
import { allowedOrigins, corsHeaders } from '#shared/http/cors.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { matchRoute } from '#shared/http/router.ts';
import { lambdaHandler, type ApiEvent, type ApiHandler, type ApiResult } from '#shared/http/wrapper.ts';
import { logger } from '#shared/logging.ts';
import { llmGatewayRoute, routes } from '#shared/routes.ts';
import { llmGatewayPaths, LLM_MAX_REQUEST_BYTES, type LlmGateway } from '#shared/llm/gateway.ts';
import type { FunctionWiring } from '#shared/wiring/aws.ts';
import type { LocalServices } from '#shared/wiring/local.ts';
import { attachEventStream } from '#infra/local/stream-socket.ts';

/** API Gateway's own payload limit; routes set tighter ones, answered by the wrapper. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;

export interface Gateway {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * Loads every route's entry file and runs its operation with the local adapters of the same names
 * as its AWS wiring's (derived from its services and declaration), held to the route's declaration
 * (shared/wiring/adapters.ts).
 */
export async function loadHandlers(services: LocalServices): Promise<Map<string, ApiHandler>> {
  const handlers = new Map<string, ApiHandler>();
  for (const route of routes as readonly RouteDef[]) {
    const mod = (await import(new URL(`../../${route.entry}`, import.meta.url).href)) as {
      handler?: { wiring?: FunctionWiring };
    };
    const wiring = mod.handler?.wiring;
    if (!wiring?.operation) throw new Error(`${route.entry} exports no handler made by awsRoute`);
    const scoped = services.forFunction(route.id, route, wiring.adapters, wiring.services);
    handlers.set(
      route.id,
      lambdaHandler(wiring.operation, () => scoped),
    );
  }
  return handlers;
}

/** The LLM gateway's entry, run with the local adapters of the same names, held to its declaration. */
async function loadLlmGateway(services: LocalServices): Promise<LlmGateway> {
  const mod = (await import(new URL(`../../${llmGatewayRoute.entry}`, import.meta.url).href)) as {
    handler: { wiring: FunctionWiring };
  };
  const w = mod.handler.wiring;
  return services.forFunction(llmGatewayRoute.id, llmGatewayRoute, w.adapters, w.services).llmGateway;
}

/** Streams the gateway's answer onto the response as it comes; the client going away aborts the upstream call. */
async function serveLlm(
  gateway: LlmGateway,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  requestId: string,
) {
  const json = (status: number, body: unknown, extra: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': requestId, ...extra });
    res.end(JSON.stringify(body));
  };
  if (req.method !== 'POST') return json(405, { detail: 'Method Not Allowed' }, { allow: 'POST' });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > LLM_MAX_REQUEST_BYTES) {
      res.shouldKeepAlive = false;
      // The provider's error shape, as the gateway answers it (Lambda's 6 MB payload limit on AWS).
      const message = `The request is larger than ${LLM_MAX_REQUEST_BYTES} bytes`;
      return json(
        413,
        path.endsWith('/messages')
          ? { type: 'error', error: { type: 'request_too_large', message } }
          : { error: { message, type: 'request_too_large', code: null } },
      );
    }
    chunks.push(chunk as Buffer);
  }
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  await gateway.handle(
    {
      path,
      headers: req.headers as Record<string, string | undefined>,
      body: Buffer.concat(chunks),
      requestId,
      signal: abort.signal,
    },
    {
      head: (status, headers) => {
        res.writeHead(status, headers);
        res.flushHeaders();
      },
      write: (chunk) => {
        if (!res.destroyed) res.write(chunk);
      },
      end: () => res.end(),
    },
  );
}

function send(res: ServerResponse, result: ApiResult, cors: Record<string, string> = {}): void {
  const headers: Record<string, string> = { ...cors };
  for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
  res.writeHead(result.statusCode ?? 200, headers);
  // A binary answer (a workspace file) comes base64-encoded, as API Gateway takes it from Lambda.
  res.end(result.isBase64Encoded && result.body ? Buffer.from(result.body, 'base64') : (result.body ?? ''));
}

const jsonResult = (
  status: number,
  body: unknown,
  requestId: string,
  extra: Record<string, string> = {},
): ApiResult => ({
  statusCode: status,
  headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...extra },
  body: JSON.stringify(body),
});

const EMPTY = Buffer.alloc(0);

async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > GATEWAY_MAX_BODY) return 'too-large';
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The payload 2.0 event API Gateway would send for this request. */
function toEvent(
  req: IncomingMessage,
  url: URL,
  route: RouteDef,
  params: Record<string, string>,
  body: Buffer,
  requestId: string,
  auth: AuthorizerContext | undefined,
): ApiEvent {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
  // As API Gateway does: the scheme the client used.
  headers['x-forwarded-proto'] = 'http';
  // No CloudFront in front of this gateway: a client's own viewer address is not believed.
  delete headers[VIEWER_ADDRESS_HEADER];
  // As payload 2.0 does: cookies in their own list, not in the headers.
  const cookies = headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .filter(Boolean);
  delete headers.cookie;
  const queryStringParameters: Record<string, string> = {};
  for (const [k, v] of url.searchParams)
    queryStringParameters[k] = k in queryStringParameters ? `${queryStringParameters[k]},${v}` : v;
  const now = new Date();
  return {
    version: '2.0',
    routeKey: `${route.method} ${route.path}`,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(cookies?.length ? { cookies } : {}),
    queryStringParameters: Object.keys(queryStringParameters).length ? queryStringParameters : undefined,
    pathParameters: Object.keys(params).length ? params : undefined,
    body: body.length ? body.toString('utf8') : undefined,
    isBase64Encoded: false,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '',
        userAgent: req.headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: `${route.method} ${route.path}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
      authorizer: { lambda: auth ?? { userId: '' } },
    },
  } as ApiEvent;
}

const lambdaContext = (requestId: string, routeId: string): Context =>
  ({
    awsRequestId: requestId,
    functionName: `local-${routeId}`,
    functionVersion: '$LATEST',
    memoryLimitInMB: '1024',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => 30_000,
  }) as unknown as Context;

/**
 * Serves the route table over HTTP the way API Gateway does: CORS for the origins in
 * `CORS_ORIGINS` (preflight `OPTIONS` answered on every path), match the route (404/405), run the
 * same authorizer code for user routes, build the payload 2.0 event and call the route's handler.
 */
export async function startGateway(options: {
  services: LocalServices;
  port: number;
  host: string;
  streamPingMs?: number;
  /** A handler for every path under `path` (the development OpenID provider), once it exists. */
  mount?: { path: string; handler: () => ((req: IncomingMessage, res: ServerResponse) => void) | undefined };
}): Promise<Gateway> {
  const handlers = await loadHandlers(options.services);
  const llm = await loadLlmGateway(options.services);
  const origins = allowedOrigins();
  const { apiKeys, sessions, conversationKeys, accounts } = options.services;
  // Handlers still running (a long-poll whose client went away) finish before close() resolves.
  const inFlight = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const requestId = randomUUID();
    const mount = options.mount;
    if (
      mount &&
      (req.url === mount.path || req.url?.startsWith(`${mount.path}/`) || req.url?.startsWith(`${mount.path}?`))
    ) {
      const handler = mount.handler();
      if (handler) return handler(req, res);
    }
    const work = (async () => {
      const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
      const origin = req.headers.origin;
      if (req.method === 'OPTIONS') {
        // API Gateway answers preflights itself, before routes and authorizer: so do we.
        const preflight = !!req.headers['access-control-request-method'];
        return send(
          res,
          { statusCode: 204, headers: { 'x-request-id': requestId }, body: '' },
          corsHeaders(origin, origins, preflight),
        );
      }
      const cors = corsHeaders(origin, origins, false);
      // The LLM gateway's paths (a streaming route of its own kind, shared/routes.ts `llmGatewayRoute`).
      if (url.pathname in llmGatewayPaths) return serveLlm(llm, req, res, url.pathname, requestId);
      const match = matchRoute(req.method ?? 'GET', url.pathname);
      if (match.kind === 'not-found') return send(res, jsonResult(404, { detail: 'Not Found' }, requestId), cors);
      if (match.kind === 'method-not-allowed') {
        return send(
          res,
          jsonResult(405, { detail: 'Method Not Allowed' }, requestId, { allow: match.allowed.join(', ') }),
          cors,
        );
      }
      // A request without a body (no length, not chunked) has nothing to read: no stream iteration for it.
      const body =
        req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined
          ? EMPTY
          : await readBody(req);
      if (body === 'too-large') {
        res.shouldKeepAlive = false;
        return send(res, jsonResult(413, { detail: 'Request body is too large' }, requestId), cors);
      }
      let auth: AuthorizerContext | undefined;
      if (match.route.auth === 'user') {
        const headers = { ...(req.headers as Record<string, string>), 'x-forwarded-proto': 'http' };
        auth = await authorizeRequest(
          req.method ?? 'GET',
          headers,
          {
            apiKeys,
            sessions,
            conversationKeys,
            accounts,
            // Read per request (cached by configuration): the development issuer is configured once the port is known.
            oidc: oidcVerifier(),
            allowedOrigins: origins,
            plans: options.services.plans,
            // The sign-in counters (the keys table's), as the OpenID exchange counts its attempts.
            addressLimiter: options.services.oidcSignIn.limiter,
          },
          // The connection's own address: no CloudFront here, and a viewer address a client wrote is never read.
          match.route.limitedPerAddress ? clientAddress({}, req.socket.remoteAddress) : undefined,
        );
      }
      const event = toEvent(req, url, match.route, match.params, body, requestId, auth);
      send(res, await handlers.get(match.route.id)!(event, lambdaContext(requestId, match.route.id)), cors);
    })().catch((err: unknown) => {
      logger.error('Gateway error', { requestId, error: err as Error });
      if (!res.headersSent) send(res, jsonResult(500, { detail: 'Internal Server Error' }, requestId));
      else res.destroy();
    });
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  });
  // The live event stream (WebSocket) on the same port.
  const stream = attachEventStream(server, {
    services: options.services,
    allowedOrigins: origins,
    pingMs: options.streamPingMs,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    server,
    close: async () => {
      await stream.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.allSettled([...inFlight]);
    },
  };
}
