import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InvokeResult, LambdaService } from '#test/tier/lambda.ts';
import { ACCOUNT, names, ofType, REGION, STACK, type Template } from '#test/tier/template.ts';

/**
 * An HTTP API (API Gateway v2) as the template defines it: its routes (`METHOD /path/{param}`,
 * `{proxy+}`, `ANY`, `$default`) chosen by API Gateway's precedence, Lambda proxy integrations with
 * payload format 2.0, REQUEST authorizers (payload 2.0, simple or IAM-policy responses, identity
 * sources that answer 401 when missing, results cached for AuthorizerResultTtlInSeconds by identity),
 * the stage, CORS preflight when configured, and API Gateway's own answers: 404 for no route,
 * 401/403 from the authorizer, 500 when the function fails or its resource policy does not let API
 * Gateway invoke it, 503 past the 30 s integration timeout. Not emulated: throttling, mTLS, custom
 * domains, request size limits, JWT and IAM authorizers.
 */

interface RouteDef {
  key: string;
  method: string;
  segments: string[];
  functionArn: string;
  payloadVersion: string;
  authorizer?: AuthorizerDef;
}

interface AuthorizerDef {
  id: string;
  functionArn: string;
  identitySource: string[];
  ttlSeconds: number;
  simple: boolean;
  payloadVersion: string;
}

export interface GatewayRecord {
  routeKey: string;
  method: string;
  path: string;
  status: number;
  /** What went wrong inside API Gateway or the function (API Gateway logs it as integrationErrorMessage). */
  error?: string;
  functionArn?: string;
}

const INTEGRATION_TIMEOUT_MS = 30_000;
const TEXT = /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded)|[^;]*\+json)/i;
const gatewayAnswer = (status: number, message: string) => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(JSON.stringify({ message })),
});

export class HttpApiEmulator {
  readonly apiId: string;
  readonly stage: string;
  readonly records: GatewayRecord[] = [];
  /** Errors of the emulator itself (never of a function): a test asserts there are none. */
  readonly faults: Error[] = [];
  private readonly routes: RouteDef[] = [];
  private readonly cors?: any;
  private readonly cache = new Map<string, { until: number; result: { allowed: boolean; context?: unknown } }>();
  private server!: Server;
  url = '';

  constructor(
    resolved: Template,
    private readonly lambda: LambdaService,
  ) {
    // The WebSocket API is test/tier/websocket-api.ts's.
    const apis = ofType(resolved, 'AWS::ApiGatewayV2::Api').filter(([, r]) => r.Properties.ProtocolType === 'HTTP');
    if (apis.length !== 1) throw new Error(`The tier emulates one HTTP API; the template has ${apis.length}`);
    const [apiLogical, api] = apis[0]!;
    this.cors = api.Properties.CorsConfiguration;
    // With other APIs in the template, only this one's parts (a template of one API is taken whole).
    const alone = ofType(resolved, 'AWS::ApiGatewayV2::Api').length === 1;
    this.apiId = alone
      ? ofType(resolved, 'AWS::ApiGatewayV2::Route')[0]?.[1].Properties.ApiId
      : names(STACK, apiLogical, api).ref;
    const ofApi = (type: string) =>
      ofType(resolved, type).filter(([, r]) => alone || r.Properties.ApiId === this.apiId);
    const stages = ofApi('AWS::ApiGatewayV2::Stage');
    this.stage = stages[0]?.[1].Properties.StageName ?? '$default';
    if (this.stage !== '$default') throw new Error('The tier serves the $default stage only');

    const integrations = new Map(ofApi('AWS::ApiGatewayV2::Integration').map(([id, r]) => [id, r.Properties]));
    const authorizers = new Map(
      ofApi('AWS::ApiGatewayV2::Authorizer').map(([id, r]) => {
        const p = r.Properties;
        if (p.AuthorizerType !== 'REQUEST')
          throw new Error(`Authorizer ${id}: only REQUEST (Lambda) authorizers are emulated`);
        const fn = /functions\/(.+)\/invocations$/.exec(p.AuthorizerUri)?.[1];
        if (!fn) throw new Error(`Authorizer ${id}: cannot read the function from ${p.AuthorizerUri}`);
        const def: AuthorizerDef = {
          id,
          functionArn: fn,
          identitySource: p.IdentitySource ?? [],
          ttlSeconds: p.AuthorizerResultTtlInSeconds ?? 300,
          simple: p.EnableSimpleResponses === true,
          payloadVersion: p.AuthorizerPayloadFormatVersion,
        };
        if (def.ttlSeconds > 0 && def.identitySource.length === 0)
          throw new Error(`Authorizer ${id}: caching needs an identity source (API Gateway rejects this)`);
        if (def.simple && def.payloadVersion !== '2.0')
          throw new Error(`Authorizer ${id}: simple responses need payload 2.0`);
        return [id, def];
      }),
    );
    for (const [id, r] of ofApi('AWS::ApiGatewayV2::Route')) {
      const p = r.Properties;
      const integrationId = String(p.Target ?? '').replace(/^integrations\//, '');
      const integration = integrations.get(integrationId);
      if (!integration) throw new Error(`Route ${p.RouteKey}: no integration ${p.Target}`);
      if (integration.IntegrationType !== 'AWS_PROXY')
        throw new Error(`Route ${p.RouteKey}: only Lambda proxy integrations are emulated`);
      const [method, path] = p.RouteKey === '$default' ? ['ANY', ''] : p.RouteKey.split(' ');
      const authorizer = p.AuthorizationType === 'CUSTOM' ? authorizers.get(p.AuthorizerId) : undefined;
      if (p.AuthorizationType === 'CUSTOM' && !authorizer)
        throw new Error(`Route ${id}: unknown authorizer ${p.AuthorizerId}`);
      if (!['NONE', 'CUSTOM', undefined].includes(p.AuthorizationType))
        throw new Error(`Route ${id}: authorization ${p.AuthorizationType} is not emulated`);
      this.routes.push({
        key: p.RouteKey,
        method,
        segments: p.RouteKey === '$default' ? [] : path.split('/').slice(1),
        functionArn: integration.IntegrationUri,
        payloadVersion: integration.PayloadFormatVersion,
        ...(authorizer ? { authorizer } : {}),
      });
    }
  }

  /** The route keys of the API (for the generic sweep). */
  routeKeys(): { key: string; auth: boolean }[] {
    return this.routes.map((r) => ({ key: r.key, auth: !!r.authorizer }));
  }

  async start(): Promise<void> {
    // A fault of the emulator itself answers 500 with its message, so a test sees it instead of a hung request.
    this.server = createServer(
      (req, res) =>
        void this.handle(req, res).catch((err: Error) => {
          this.faults.push(err);
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ message: `tier emulator fault: ${err.message}` }));
        }),
    );
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** API Gateway's route selection: most specific path first (literal > {param} > {proxy+}), then exact method over ANY, then `$default`. */
  match(method: string, path: string): { route: RouteDef; params: Record<string, string> } | undefined {
    const parts = path.split('/').slice(1);
    let best: { route: RouteDef; params: Record<string, string>; score: number[] } | undefined;
    for (const route of this.routes) {
      if (route.key === '$default' || (route.method !== method && route.method !== 'ANY')) continue;
      const params: Record<string, string> = {};
      const score: number[] = [];
      let ok = true;
      for (let i = 0; i < route.segments.length && ok; i++) {
        const seg = route.segments[i]!;
        const greedy = /^\{(.+)\+\}$/.exec(seg);
        if (greedy) {
          if (i >= parts.length || i !== route.segments.length - 1) ok = false;
          else {
            const value = decoded(parts.slice(i).join('/'));
            if (value === undefined) ok = false;
            else params[greedy[1]!] = value;
          }
          score.push(0);
          break;
        }
        const part = parts[i];
        if (part === undefined) ok = false;
        else if (/^\{.+\}$/.test(seg)) {
          const value = part === '' ? undefined : decoded(part);
          if (value === undefined) ok = false;
          else params[seg.slice(1, -1)] = value;
          score.push(1);
        } else if (seg === part) score.push(2);
        else ok = false;
      }
      const greedyRoute = route.segments.some((s) => s.endsWith('+}'));
      if (!ok || (!greedyRoute && route.segments.length !== parts.length)) continue;
      score.push(route.method === method ? 1 : 0);
      if (!best || compare(score, best.score) > 0) best = { route, params, score };
    }
    if (best) return best;
    const fallback = this.routes.find((r) => r.key === '$default');
    return fallback ? { route: fallback, params: {} } : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const record: GatewayRecord = { routeKey: '-', method, path, status: 0 };
    this.records.push(record);
    const send = (r: { status: number; headers: Record<string, string | string[]>; body: Buffer }) => {
      record.status = r.status;
      res
        .writeHead(r.status, { ...r.headers, 'apigw-requestid': randomUUID().slice(0, 16), ...this.corsHeaders(req) })
        .end(r.body);
    };
    if (method === 'OPTIONS' && this.cors && req.headers.origin && req.headers['access-control-request-method'])
      return send(this.preflight(req));
    const matched = this.match(method, path);
    if (!matched) return send(gatewayAnswer(404, 'Not Found'));
    const { route, params } = matched;
    record.routeKey = route.key;
    record.functionArn = route.functionArn;
    const event = this.event(req, url, route, params, Buffer.concat(chunks));
    if (route.authorizer) {
      const auth = await this.authorize(route, event);
      if (auth.status) {
        record.error = auth.error;
        return send(
          gatewayAnswer(
            auth.status,
            auth.status === 401 ? 'Unauthorized' : auth.status === 403 ? 'Forbidden' : 'Internal Server Error',
          ),
        );
      }
      event.requestContext.authorizer = { lambda: auth.context ?? {} };
    }
    const sourceArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${this.apiId}/${this.stage}/${route.key === '$default' ? '$default' : `${route.method}/${route.segments.join('/')}`}`;
    const result = await withTimeout(
      this.lambda.invokeAs('apigateway.amazonaws.com', sourceArn, route.functionArn, event),
      INTEGRATION_TIMEOUT_MS,
    );
    if (!result) {
      record.error = 'integration timeout';
      return send(gatewayAnswer(503, 'Service Unavailable'));
    }
    if (!result.ok) {
      record.error = `${result.error?.errorType}: ${result.error?.errorMessage}`;
      return send(gatewayAnswer(500, 'Internal Server Error'));
    }
    const response = toHttp(result.result);
    if (!response) {
      record.error = 'malformed Lambda proxy response';
      return send(gatewayAnswer(500, 'Internal Server Error'));
    }
    send(response);
  }

  /** The payload 2.0 request event. */
  private event(req: IncomingMessage, url: URL, route: RouteDef, params: Record<string, string>, body: Buffer): any {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined && k !== 'cookie') headers[k] = Array.isArray(v) ? v.join(',') : v;
    // API Gateway's own forwarding headers: clients reach it over https only.
    Object.assign(headers, { 'x-forwarded-proto': 'https', 'x-forwarded-port': '443', 'x-forwarded-for': '127.0.0.1' });
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
    const cookies = req.headers.cookie
      ?.split(';')
      .map((c) => c.trim())
      .filter(Boolean);
    const now = new Date();
    const text = TEXT.test(headers['content-type'] ?? '') || body.length === 0;
    return {
      version: '2.0',
      routeKey: route.key,
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      ...(cookies?.length ? { cookies } : {}),
      headers,
      ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
      requestContext: {
        accountId: ACCOUNT,
        apiId: this.apiId,
        domainName: headers.host ?? `${this.apiId}.execute-api.${REGION}.amazonaws.com`,
        domainPrefix: (headers.host ?? this.apiId).split('.')[0],
        http: {
          method: req.method,
          path: url.pathname,
          protocol: `HTTP/${req.httpVersion}`,
          sourceIp: '127.0.0.1',
          userAgent: headers['user-agent'] ?? '',
        },
        requestId: randomUUID(),
        routeKey: route.key,
        stage: this.stage,
        time: now.toISOString(),
        timeEpoch: now.getTime(),
      },
      ...(Object.keys(params).length ? { pathParameters: params } : {}),
      ...(body.length ? { body: text ? body.toString('utf8') : body.toString('base64') } : {}),
      isBase64Encoded: !text,
    };
  }

  private async authorize(
    route: RouteDef,
    event: any,
  ): Promise<{ status?: number; error?: string; context?: unknown }> {
    const a = route.authorizer!;
    const identity = a.identitySource.map((src) => {
      const m = /^\$request\.(header|querystring)\.(.+)$/.exec(src);
      if (!m) throw new Error(`Identity source ${src} is not emulated`);
      return m[1] === 'header' ? event.headers[m[2]!.toLowerCase()] : event.queryStringParameters?.[m[2]!];
    });
    if (identity.some((v) => v === undefined || v === '')) return { status: 401, error: 'identity source missing' };
    const cacheKey = `${a.id}|${route.key}|${identity.join('|')}`;
    const cached = a.ttlSeconds > 0 ? this.cache.get(cacheKey) : undefined;
    let decision = cached && cached.until > Date.now() ? cached.result : undefined;
    if (!decision) {
      const { body: _b, isBase64Encoded: _i, ...rest } = event;
      const routeArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${this.apiId}/${this.stage}/${event.requestContext.http.method}${event.rawPath}`;
      const authEvent = { ...rest, type: 'REQUEST', routeArn, identitySource: identity };
      const sourceArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${this.apiId}/authorizers/${a.id}`;
      const out: InvokeResult | undefined = await withTimeout(
        this.lambda.invokeAs('apigateway.amazonaws.com', sourceArn, a.functionArn, authEvent),
        10_000,
      );
      if (!out?.ok)
        return {
          status: 500,
          error: `authorizer: ${out ? `${out.error?.errorType}: ${out.error?.errorMessage}` : 'timeout'}`,
        };
      const r = out.result as any;
      if (a.simple) {
        if (typeof r?.isAuthorized !== 'boolean')
          return { status: 500, error: 'authorizer: simple response without isAuthorized' };
        decision = { allowed: r.isAuthorized, context: r.context };
      } else {
        const allowed = (r?.policyDocument?.Statement ?? []).some((s: any) => s.Effect === 'Allow');
        decision = { allowed, context: r?.context };
      }
      if (a.ttlSeconds > 0) this.cache.set(cacheKey, { until: Date.now() + a.ttlSeconds * 1000, result: decision });
    }
    return decision.allowed ? { context: decision.context } : { status: 403, error: 'authorizer denied' };
  }

  private corsHeaders(req: IncomingMessage): Record<string, string> {
    const origin = req.headers.origin;
    if (!this.cors || !origin) return {};
    const origins: string[] = this.cors.AllowOrigins ?? [];
    if (!origins.includes(origin) && !origins.includes('*')) return {};
    return {
      'access-control-allow-origin': origins.includes('*') ? '*' : origin,
      ...(this.cors.ExposeHeaders?.length
        ? { 'access-control-expose-headers': this.cors.ExposeHeaders.join(',') }
        : {}),
      ...(this.cors.AllowCredentials ? { 'access-control-allow-credentials': 'true' } : {}),
    };
  }

  private preflight(req: IncomingMessage) {
    const c = this.cors;
    const allowed = (c.AllowOrigins ?? []).some((o: string) => o === '*' || o === req.headers.origin);
    if (!allowed) return { status: 204, headers: {}, body: Buffer.alloc(0) };
    return {
      status: 204,
      headers: {
        'access-control-allow-methods': (c.AllowMethods ?? []).join(','),
        'access-control-allow-headers': (c.AllowHeaders ?? []).join(','),
        ...(c.MaxAge !== undefined ? { 'access-control-max-age': String(c.MaxAge) } : {}),
      },
      body: Buffer.alloc(0),
    };
  }
}

/**
 * A path segment as a path parameter, or undefined when its percent-encoding is malformed: such a
 * path matches no route with a parameter there (as in the local router), so it falls to `$default`.
 */
function decoded(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

const compare = (a: number[], b: number[]) => {
  for (let i = 0; i < Math.max(a.length, b.length); i++)
    if ((a[i] ?? -1) !== (b[i] ?? -1)) return (a[i] ?? -1) - (b[i] ?? -1);
  return 0;
};

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T | undefined> =>
  new Promise((resolve, reject) => {
    const t = setTimeout(() => resolve(undefined), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });

/** A payload 2.0 Lambda result as HTTP: a proxy response object, or any other JSON value as a 200 JSON body. */
function toHttp(
  result: unknown,
): { status: number; headers: Record<string, string | string[]>; body: Buffer } | undefined {
  if (result && typeof result === 'object' && 'statusCode' in result) {
    const r = result as {
      statusCode: unknown;
      headers?: Record<string, unknown>;
      multiValueHeaders?: Record<string, unknown[]>;
      cookies?: string[];
      body?: unknown;
      isBase64Encoded?: boolean;
    };
    if (typeof r.statusCode !== 'number' || r.statusCode < 100 || r.statusCode > 599) return undefined;
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(r.headers ?? {})) headers[k.toLowerCase()] = String(v);
    for (const [k, v] of Object.entries(r.multiValueHeaders ?? {})) headers[k.toLowerCase()] = v.map(String).join(',');
    if (r.cookies?.length) headers['set-cookie'] = r.cookies;
    const body =
      typeof r.body === 'string' ? Buffer.from(r.body, r.isBase64Encoded ? 'base64' : 'utf8') : Buffer.alloc(0);
    return { status: r.statusCode, headers, body };
  }
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(typeof result === 'string' ? result : JSON.stringify(result)),
  };
}
