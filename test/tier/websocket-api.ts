import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { InvokeResult, LambdaService } from '#test/tier/lambda.ts';
import { ACCOUNT, names, ofType, REGION, STACK, type Template } from '#test/tier/template.ts';

/**
 * A WebSocket API (API Gateway v2, `ProtocolType: WEBSOCKET`) as the template defines it, for the
 * tier and for any stream built on one (the event stream; sandbox commands):
 * - the stage is the only path (`ws://<host>/<stage>?…`; anything after it is refused with 403, as
 *   on AWS, which is why CloudFront rewrites `/sockets/…`);
 * - `$connect` runs its Lambda proxy integration before the handshake completes: a 200 opens the
 *   connection, any other status refuses the handshake with it; a failure is a 500;
 * - messages are routed by the API's route selection expression (`$request.body.<field>`) to a
 *   route or `$default`: a MOCK integration consumes the message, a Lambda one gets the MESSAGE
 *   event (and its `body` goes back when the route has a route response);
 * - `$disconnect` runs after any close (the client's, idle, the 2-hour limit, DeleteConnection);
 * - the @connections management API (`manage`, served by test/tier/aws.ts after the IAM check of
 *   `execute-api:ManageConnections`): PostToConnection (410 before the connection opened or after
 *   it closed, 413 over 128 KB, sent in frames of at most 32 KB), GetConnection, DeleteConnection;
 * - limits: client messages over 128 KB close the connection (1009); 10 minutes without a message
 *   in either direction, or 2 hours after connecting, close it (1001), on an injectable clock
 *   (`advance`) checked by `sweep`.
 * Not emulated: the 32 KB limit on frames a client sends (the ws library hands over whole
 * messages), throttling, authorizers on `$connect` (the stack has none), binary media types.
 */

export const WEBSOCKET_LIMITS = {
  messageBytes: 128 * 1024,
  frameBytes: 32 * 1024,
  idleMs: 10 * 60_000,
  maxMs: 2 * 60 * 60_000,
} as const;

interface WsRoute {
  key: string;
  functionArn?: string;
  mock: boolean;
  respond: boolean;
}

export interface WsConnection {
  id: string;
  socket?: WebSocket;
  /** Open: the handshake completed (after `$connect` returned 200). */
  open: boolean;
  connectedAt: number;
  lastActiveAt: number;
  sourceIp: string;
  userAgent: string;
  /** Every frame sent to the client, by size (to check the frame limit). */
  frameSizes: number[];
}

export interface WsRecord {
  routeKey: string;
  connectionId: string;
  status?: number;
  error?: string;
}

const answer = (status: number, body: unknown) => ({
  status,
  body: body === undefined ? undefined : JSON.stringify(body),
});

export class WebSocketApiEmulator {
  readonly apiId: string;
  readonly stage: string;
  readonly records: WsRecord[] = [];
  readonly faults: Error[] = [];
  readonly connections = new Map<string, WsConnection>();
  private readonly routes = new Map<string, WsRoute>();
  private readonly selection: string;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: WEBSOCKET_LIMITS.messageBytes });
  private server!: Server;
  private timer?: NodeJS.Timeout;
  /** Added to the real clock: `advance` moves time for the idle and expiry limits. */
  private skew = 0;
  url = '';

  constructor(
    resolved: Template,
    private readonly lambda: LambdaService,
    options: { apiLogicalId?: string } = {},
  ) {
    const apis = ofType(resolved, 'AWS::ApiGatewayV2::Api').filter(
      ([id, r]) => r.Properties.ProtocolType === 'WEBSOCKET' && (!options.apiLogicalId || id === options.apiLogicalId),
    );
    if (apis.length !== 1)
      throw new Error(
        `Expected one WebSocket API${options.apiLogicalId ? ` ${options.apiLogicalId}` : ''}; the template has ${apis.length}`,
      );
    const [logicalId, api] = apis[0]!;
    this.apiId = names(STACK, logicalId, api).ref;
    this.selection = api.Properties.RouteSelectionExpression ?? '$request.body.action';
    const ofApi = (type: string) => ofType(resolved, type).filter(([, r]) => r.Properties.ApiId === this.apiId);
    const stages = ofApi('AWS::ApiGatewayV2::Stage');
    if (stages.length !== 1) throw new Error(`The WebSocket API has ${stages.length} stages; the tier serves one`);
    this.stage = stages[0]![1].Properties.StageName;
    const integrations = new Map(ofApi('AWS::ApiGatewayV2::Integration').map(([id, r]) => [id, r.Properties]));
    const responses = new Set(ofApi('AWS::ApiGatewayV2::RouteResponse').map(([, r]) => r.Properties.RouteId));
    for (const [id, r] of ofApi('AWS::ApiGatewayV2::Route')) {
      const p = r.Properties;
      if (p.AuthorizationType && p.AuthorizationType !== 'NONE')
        throw new Error(`Route ${p.RouteKey}: authorization ${p.AuthorizationType} is not emulated`);
      const integration = integrations.get(String(p.Target ?? '').replace(/^integrations\//, ''));
      if (!integration) throw new Error(`Route ${p.RouteKey}: no integration ${p.Target}`);
      if (integration.IntegrationType !== 'AWS_PROXY' && integration.IntegrationType !== 'MOCK')
        throw new Error(`Route ${p.RouteKey}: ${integration.IntegrationType} integrations are not emulated`);
      const functionArn =
        integration.IntegrationType === 'AWS_PROXY'
          ? /functions\/(.+)\/invocations$/.exec(integration.IntegrationUri)?.[1]
          : undefined;
      if (integration.IntegrationType === 'AWS_PROXY' && !functionArn)
        throw new Error(`Route ${p.RouteKey}: cannot read the function from ${integration.IntegrationUri}`);
      this.routes.set(p.RouteKey, {
        key: p.RouteKey,
        functionArn,
        mock: integration.IntegrationType === 'MOCK',
        respond: responses.has(id) || p.RouteResponseSelectionExpression !== undefined,
      });
    }
    this.wss.on('error', (err) => this.faults.push(err));
  }

  /** The route keys of the API. */
  routeKeys(): string[] {
    return [...this.routes.keys()];
  }

  now(): number {
    return Date.now() + this.skew;
  }

  /** Moves the clock on, then applies the idle and duration limits. */
  async advance(ms: number): Promise<void> {
    this.skew += ms;
    await this.sweep();
  }

  async start(): Promise<void> {
    this.server = createServer((_req, res) =>
      res.writeHead(426, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Upgrade Required' })),
    );
    this.server.on(
      'upgrade',
      (req, socket, head) => void this.upgrade(req, socket, head).catch((err: Error) => this.fault(err, socket)),
    );
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.timer = setInterval(() => void this.sweep().catch((err: Error) => this.faults.push(err)), 1000);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const c of this.connections.values()) c.socket?.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Closes every connection past the idle or the duration limit, as API Gateway does. */
  async sweep(): Promise<void> {
    const now = this.now();
    const due = [...this.connections.values()].filter(
      (c) =>
        c.open && (now - c.lastActiveAt >= WEBSOCKET_LIMITS.idleMs || now - c.connectedAt >= WEBSOCKET_LIMITS.maxMs),
    );
    await Promise.all(due.map((c) => this.drop(c, 1001, 'Going away')));
  }

  private fault(err: Error, socket: Duplex): void {
    this.faults.push(err);
    socket.destroy();
  }

  private base(routeKey: string, eventType: string, c: WsConnection, extra: Record<string, unknown> = {}) {
    return {
      routeKey,
      eventType,
      connectionId: c.id,
      connectedAt: c.connectedAt,
      requestTimeEpoch: this.now(),
      requestId: randomUUID(),
      extendedRequestId: randomUUID(),
      messageDirection: 'IN',
      stage: this.stage,
      domainName: `${this.apiId}.execute-api.${REGION}.amazonaws.com`,
      apiId: this.apiId,
      identity: { sourceIp: c.sourceIp, userAgent: c.userAgent },
      ...extra,
    };
  }

  private async invoke(route: WsRoute, event: unknown, connectionId: string): Promise<InvokeResult> {
    const sourceArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${this.apiId}/${this.stage}/${route.key}`;
    const result = await this.lambda.invokeAs('apigateway.amazonaws.com', sourceArn, route.functionArn!, event);
    this.records.push({
      routeKey: route.key,
      connectionId,
      status: result.ok ? Number((result.result as { statusCode?: number } | null)?.statusCode ?? 200) : 500,
      ...(result.ok ? {} : { error: `${result.error?.errorType}: ${result.error?.errorMessage}` }),
    });
    return result;
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const refuse = (status: number, body = '') => {
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    // The stage is the whole path: anything after it is refused before any route runs.
    if (url.pathname !== `/${this.stage}`) return refuse(403, JSON.stringify({ message: 'Forbidden' }));
    const now = this.now();
    const c: WsConnection = {
      id: `${randomBytes(9).toString('base64url')}=`,
      open: false,
      connectedAt: now,
      lastActiveAt: now,
      sourceIp: (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
      userAgent: String(req.headers['user-agent'] ?? ''),
      frameSizes: [],
    };
    this.connections.set(c.id, c);
    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined) continue;
      // API Gateway passes header names as the client wrote them; Node lower-cases them.
      headers[k] = Array.isArray(v) ? v.join(',') : v;
      multiValueHeaders[k] = Array.isArray(v) ? v : [v];
    }
    const query: Record<string, string> = {};
    const multiQuery: Record<string, string[]> = {};
    for (const [k, v] of url.searchParams) {
      query[k] = v;
      multiQuery[k] ??= [];
      multiQuery[k].push(v);
    }
    const route = this.routes.get('$connect');
    if (route?.functionArn) {
      const event = {
        headers,
        multiValueHeaders,
        ...(Object.keys(query).length
          ? { queryStringParameters: query, multiValueQueryStringParameters: multiQuery }
          : {}),
        requestContext: this.base('$connect', 'CONNECT', c),
        isBase64Encoded: false,
      };
      const result = await this.invoke(route, event, c.id);
      const status = result.ok ? Number((result.result as { statusCode?: number } | null)?.statusCode ?? 200) : 500;
      if (status < 200 || status > 299) {
        this.connections.delete(c.id);
        const body = result.ok
          ? String((result.result as { body?: string } | null)?.body ?? '')
          : JSON.stringify({ message: 'Internal server error' });
        return refuse(status, body);
      }
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      c.socket = ws;
      c.open = true;
      ws.on(
        'message',
        (data, isBinary) => void this.message(c, data as Buffer, isBinary).catch((err: Error) => this.faults.push(err)),
      );
      ws.on(
        'close',
        (code, reason) => void this.closed(c, code, reason.toString()).catch((err: Error) => this.faults.push(err)),
      );
      ws.on('error', () => undefined);
    });
  }

  private async message(c: WsConnection, data: Buffer, isBinary: boolean): Promise<void> {
    c.lastActiveAt = this.now();
    const text = data.toString('utf8');
    const field = /^\$request\.body\.(.+)$/.exec(this.selection)?.[1];
    let selected: string | undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      const value = field
        ? field
            .split('.')
            .reduce<unknown>(
              (o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined),
              parsed,
            )
        : undefined;
      if (typeof value === 'string') selected = value;
    } catch {
      // not JSON: only $default can take it
    }
    const route = (selected !== undefined && this.routes.get(selected)) || this.routes.get('$default');
    if (!route || route.key === '$connect' || route.key === '$disconnect') {
      this.send(c, JSON.stringify({ message: 'Forbidden', connectionId: c.id, requestId: randomUUID() }));
      return;
    }
    if (route.mock) {
      this.records.push({ routeKey: route.key, connectionId: c.id, status: 200 });
      return;
    }
    const event = {
      requestContext: this.base(route.key, 'MESSAGE', c),
      body: isBinary ? data.toString('base64') : text,
      isBase64Encoded: isBinary,
    };
    const result = await this.invoke(route, event, c.id);
    const body = (result.result as { body?: unknown } | null)?.body;
    if (result.ok && route.respond && typeof body === 'string') this.send(c, body);
    if (!result.ok)
      this.send(c, JSON.stringify({ message: 'Internal server error', connectionId: c.id, requestId: randomUUID() }));
  }

  private async closed(c: WsConnection, code: number, reason: string): Promise<void> {
    if (!this.connections.delete(c.id)) return;
    c.open = false;
    const route = this.routes.get('$disconnect');
    if (route?.functionArn) {
      await this.invoke(
        route,
        {
          headers: {},
          requestContext: this.base('$disconnect', 'DISCONNECT', c, {
            disconnectStatusCode: code,
            disconnectReason: reason,
          }),
          isBase64Encoded: false,
        },
        c.id,
      );
    }
  }

  /** Closes a connection from API Gateway's side; `$disconnect` runs when the close completes. */
  private async drop(c: WsConnection, code: number, reason: string): Promise<void> {
    const socket = c.socket;
    if (!socket) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        socket.terminate();
        resolve();
      }, 2000);
      socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      socket.close(code, reason);
    });
    await this.closed(c, code, reason);
  }

  /** Sends one message in frames of at most 32 KB, as API Gateway does. */
  private send(c: WsConnection, data: Buffer | string): void {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const size = WEBSOCKET_LIMITS.frameBytes;
    for (let at = 0; at < buf.length || at === 0; at += size) {
      const chunk = buf.subarray(at, at + size);
      c.frameSizes.push(chunk.length);
      c.socket!.send(chunk, { binary: false, fin: at + size >= buf.length });
      if (buf.length === 0) break;
    }
    c.lastActiveAt = this.now();
  }

  /**
   * The @connections management API on this API's stage (test/tier/aws.ts checks the caller's
   * `execute-api:ManageConnections` first): POST sends, GET describes, DELETE closes.
   */
  async manage(method: string, connectionId: string, body: Buffer): Promise<{ status: number; body?: string }> {
    const c = this.connections.get(connectionId);
    if (!c?.open) return answer(410, { message: 'GoneException' });
    if (method === 'POST') {
      if (body.length > WEBSOCKET_LIMITS.messageBytes) return answer(413, { message: 'Message too long' });
      this.send(c, body);
      return answer(200, undefined);
    }
    if (method === 'GET') {
      return answer(200, {
        connectedAt: new Date(c.connectedAt).toISOString(),
        lastActiveAt: new Date(c.lastActiveAt).toISOString(),
        identity: { sourceIp: c.sourceIp, userAgent: c.userAgent },
      });
    }
    if (method === 'DELETE') {
      await this.drop(c, 1000, '');
      return answer(204, undefined);
    }
    return answer(404, { message: 'Not Found' });
  }
}
