import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { BRIDGE_SOCKET_PONG, BRIDGE_SOCKET_STAGE } from '#infra/constructs/bridge-socket.ts';

/** A `$connect` handler: API Gateway's event in, a status code out (200 accepts the connection). */
export type ConnectHandler = (event: {
  requestContext: { connectionId: string; routeKey: '$connect'; eventType: 'CONNECT' };
  headers: Record<string, string | undefined>;
  queryStringParameters?: Record<string, string | undefined>;
}) => Promise<{ statusCode: number }>;

/**
 * API Gateway's bridge socket (infra/constructs/bridge-socket.ts) on loopback, as far as the program
 * and the pusher can tell: `wss://.../bridge?sandbox_id=` upgrades through the `$connect` handler
 * given (the real entry, functions/bridge/socket-connect.ts), every message from a program is
 * answered with the MOCK route's pong, and the management endpoint `POST /bridge/@connections/{id}`
 * posts to a connection (410 when it is gone; a request without a SigV4 signature is refused), which
 * is what the real `ApiGatewayCommandPush` calls. Tests may refuse connections or drop them.
 */
export class BridgeSocketEmulator {
  /** Open connections by id. */
  readonly connections = new Map<string, WebSocket>();
  /** Messages programs sent (their pings), by connection. */
  readonly received: { connectionId: string; text: string }[] = [];
  /** Posts to @connections: which connection, what, and the answer. */
  readonly posts: { connectionId: string; text: string; status: number }[] = [];
  /** Answers every upgrade with this status instead of running $connect (an outage). */
  refuseWith: number | undefined;
  /** Whether to answer pings (false: a connection that went silent). */
  answerPings = true;
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private base = '';

  constructor(private readonly connect: ConnectHandler) {
    this.server = createServer((req, res) => void this.manage(req, res));
    this.server.on('upgrade', (req, socket, head) => void this.upgrade(req, socket, head));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** What programs connect to (BRIDGE_SOCKET_URL). */
  get url(): string {
    return `ws://${this.base}/${BRIDGE_SOCKET_STAGE}`;
  }

  /** The management endpoint (BRIDGE_SOCKET_ENDPOINT). */
  get endpoint(): string {
    return `http://${this.base}/${BRIDGE_SOCKET_STAGE}`;
  }

  /** Ends a connection from the server side (API Gateway's 2-hour limit, a network drop). */
  drop(connectionId: string): void {
    this.connections.get(connectionId)?.terminate();
    this.connections.delete(connectionId);
  }

  async close(): Promise<void> {
    for (const ws of this.connections.values()) ws.terminate();
    this.wss.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', `http://${this.base}`);
    const refuse = (status: number) =>
      socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    if (url.pathname !== `/${BRIDGE_SOCKET_STAGE}`) return void refuse(403);
    if (this.refuseWith) return void refuse(this.refuseWith);
    const connectionId = randomBytes(9).toString('base64url');
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]),
    );
    let status = 500;
    try {
      ({ statusCode: status } = await this.connect({
        requestContext: { connectionId, routeKey: '$connect', eventType: 'CONNECT' },
        headers,
        queryStringParameters: url.searchParams.size ? Object.fromEntries(url.searchParams) : undefined,
      }));
    } catch {
      status = 500;
    }
    if (status !== 200) return void refuse(status);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.connections.set(connectionId, ws);
      ws.on('message', (data) => {
        this.received.push({ connectionId, text: String(data) });
        if (this.answerPings) ws.send(BRIDGE_SOCKET_PONG);
      });
      ws.on('close', () => {
        if (this.connections.get(connectionId) === ws) this.connections.delete(connectionId);
      });
    });
  }

  private async manage(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const match = new RegExp(`^/${BRIDGE_SOCKET_STAGE}/@connections/([^/]+)$`).exec(req.url ?? '');
    if (!match || req.method !== 'POST') return void res.writeHead(404).end();
    if (!/^AWS4-HMAC-SHA256 Credential=.+\/execute-api\/aws4_request/.test(req.headers.authorization ?? ''))
      return void res.writeHead(403).end();
    const connectionId = decodeURIComponent(match[1]!);
    const text = Buffer.concat(chunks).toString('utf8');
    const ws = this.connections.get(connectionId);
    const status = ws && ws.readyState === ws.OPEN ? 200 : 410;
    this.posts.push({ connectionId, text, status });
    if (status === 200) ws!.send(text);
    res.writeHead(status, { 'content-type': 'application/json' }).end(status === 410 ? '{"message":"Gone"}' : '');
  }
}
