import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { RouteDef } from '#shared/http/route.ts';
import { clientAddress } from '#shared/http/client-address.ts';
import { logger } from '#shared/logging.ts';
import { routes } from '#shared/routes.ts';
import { relayClientMessage } from '#shared/stream/client-messages.ts';
import { REFUSALS, type StreamGrant, type StreamRefusal, type StreamRequest } from '#shared/stream/access.ts';
import type { StreamSubscription } from '#shared/stream/local-event-hub.ts';
import { registerLocalStream } from '#shared/stream/eviction.ts';
import { CLOSE, STREAM_PATH_PATTERN, startAfter } from '#shared/stream/messages.ts';
import { carriesCredentials } from '#shared/stream/first-message-auth.ts';
import { awaitFirstMessageAuth, type PendingSockets } from '#infra/local/stream-auth.ts';
import { RefusalHold } from '#infra/local/refusal-hold.ts';
import { resolveResendMode } from '#shared/stream/resend-since.ts';
import type { LocalServices } from '#shared/wiring/local.ts';
import type { Plan } from '#shared/plans/model.ts';
import { type CapRefusal, CLOSE_TOO_MANY, isRefusal, type Release, SocketCaps } from '#shared/stream/socket-caps.ts';
import { ReplayRate } from '#shared/stream/replay-rate.ts';
import { handler as sendMessageHandler } from '../../functions/conversations/send-message.ts';

/**
 * How often the server pings each client (one unanswered ping ends the connection: 4408) and checks
 * its credentials again (revoked, ended or deleted: 4401).
 */
export const DEFAULT_PING_MS = 30_000;
/** Clients send user messages at most; a bigger frame than this closes the socket (1009). */
const MAX_CLIENT_FRAME = 1024 * 1024;

export interface EventStreamOptions {
  services: LocalServices;
  allowedOrigins: readonly string[];
  pingMs?: number;
  /** The socket counts held to the plans' caps (one per server; tests may pass their own). */
  caps?: SocketCaps;
  /** Stream opens with history per user (one per server; tests may pass their own). */
  replays?: ReplayRate;
  /** How long a socket without credentials waits for its auth frame (default FIRST_MESSAGE_AUTH_MS). */
  authWaitMs?: number;
}

/** A plain HTTP answer on a socket that asked to upgrade where there is no WebSocket. */
function answer(socket: Duplex, status: string, body: unknown, retryAfterSeconds?: number): void {
  const text = JSON.stringify(body);
  const retry = retryAfterSeconds === undefined ? '' : `retry-after: ${Math.max(1, Math.ceil(retryAfterSeconds))}\r\n`;
  socket.end(
    `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${retry}connection: close\r\n\r\n${text}`,
  );
}

/**
 * The local event stream on the gateway's HTTP server: upgrades `/sockets/events/{conversation_id}`
 * after `Services.streamAccess` decides (refusals are accepted and closed at once with their code
 * and reason, the only answer a browser can read), then subscribes the connection to the
 * `LocalEventHub`, which sends each committed event once, in order. Nothing of the URL is logged
 * (it may hold a conversation key or a ticket).
 */
export function attachEventStream(
  server: Server,
  options: EventStreamOptions,
): { close(): Promise<void>; pending: PendingSockets } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_FRAME });
  const pingMs = options.pingMs ?? DEFAULT_PING_MS;
  const { services } = options;
  const caps = options.caps ?? new SocketCaps();
  // Client messages are relayed as the sendMessage route, held to its declaration and its adapters.
  const sendMessageRoute = (routes as readonly RouteDef[]).find((r) => r.id === 'sendMessage')!;
  const relayServices = services.forFunction(
    sendMessageRoute.id,
    sendMessageRoute,
    sendMessageHandler.wiring.adapters,
    sendMessageHandler.wiring.services,
  );

  const replays = options.replays ?? new ReplayRate();
  /** A slot under the plan's socket caps, for a socket whose replays per minute are within the limit. */
  const admit = (grant: StreamGrant, plan: Plan): Release | CapRefusal => {
    const tooMany = replays.take(grant.userId, grant.query);
    return tooMany ? { code: CLOSE_TOO_MANY, reason: tooMany } : caps.admit(grant.userId, grant.conversationId, plan);
  };

  const held = new RefusalHold();

  const pending: PendingSockets = new Map();
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://local');
    const match = STREAM_PATH_PATTERN.exec(url.pathname);
    if (!match) return answer(socket, '404 Not Found', { detail: 'Not Found' });
    void (async () => {
      const headers: Record<string, string | undefined> = { 'x-forwarded-proto': 'http' };
      for (const [k, v] of Object.entries(req.headers))
        if (k !== 'x-forwarded-proto') headers[k] = Array.isArray(v) ? v.join(',') : v;
      const query: Record<string, string> = {};
      // A repeated parameter is joined, as API Gateway does: it then fails validation rather than picking one.
      for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
      let verdict: StreamGrant | StreamRefusal | 'error';
      let request: StreamRequest | undefined;
      let plan: Plan | undefined;
      if (!carriesCredentials({ query, headers })) {
        // No credential in the URL or the headers: open, then wait for the auth frame (stream-auth.ts).
        const pendingRequest = { conversationId: match[1]!, query, headers };
        // Sockets still waiting for their auth frame are held to a cap per address (no user is known yet),
        // the address as on AWS (an IPv6 address as its /64); no CloudFront here, so no viewer header is read.
        const waiting = caps.admitPending(clientAddress({}, req.socket.remoteAddress));
        return wss.handleUpgrade(req, socket, head, (ws) => {
          if (isRefusal(waiting)) return ws.close(waiting.code, waiting.reason);
          awaitFirstMessageAuth(ws, pendingRequest, {
            services,
            allowedOrigins: options.allowedOrigins,
            pending,
            waitMs: options.authWaitMs,
          })
            .then(async (outcome) => {
              waiting();
              if (!outcome) return;
              // Authenticated: now held to the plan's caps like a socket that came with its credential.
              const slot = admit(outcome.grant, services.plans.plan(outcome.grant.plan));
              if (isRefusal(slot)) return ws.close(slot.code, slot.reason);
              ws.once('close', slot);
              serve(ws, outcome.grant, outcome.request);
              for (const frame of outcome.later) ws.emit('message', frame.data, frame.isBinary);
            })
            .catch((err: unknown) => {
              waiting();
              logger.error('stream.first-auth-failed', { error: err as Error });
              ws.close(CLOSE.internalError, 'Internal error');
            });
        });
      }
      try {
        // Not decoded: an id is hex and dashes, anything percent-encoded is refused as it stands.
        request = { conversationId: match[1]!, query, headers };
        verdict = await services.streamAccess.authorize(request, options.allowedOrigins);
        if (verdict.allowed) plan = services.plans.plan(verdict.plan);
      } catch (err) {
        logger.error('stream.authorize-failed', { error: err as Error });
        verdict = 'error';
      }
      // Over the request rate: answered before the handshake (as API Gateway's `$connect` answers 429),
      // so an open in a loop costs the server a key check, not a WebSocket upgrade; and answered after a
      // hold (infra/local/refusal-hold.ts), so such a loop opens at most once a second per socket.
      if (verdict !== 'error' && !verdict.allowed && verdict.status === 429) {
        const { reason, retryAfter } = verdict;
        logger.info('stream.refused', { status: 429, reason });
        return held.hold(clientAddress({}, req.socket.remoteAddress), socket, retryAfter, () =>
          answer(socket, '429 Too Many Requests', { detail: reason }, retryAfter),
        );
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        if (verdict === 'error') return ws.close(CLOSE.internalError, 'Internal error');
        if (!verdict.allowed) {
          logger.info('stream.refused', { status: verdict.status, reason: verdict.reason });
          return ws.close(verdict.code, verdict.reason);
        }
        // Over a cap of the user's plan: refused like any other refusal, before anything is read or sent.
        const slot = admit(verdict, plan!);
        if (isRefusal(slot)) {
          logger.info('stream.refused', { status: 429, reason: slot.reason });
          return ws.close(slot.code, slot.reason);
        }
        ws.once('close', slot);
        serve(ws, verdict, request!);
      });
    })().catch((err: unknown) => {
      logger.error('stream.upgrade-failed', { error: err as Error });
      socket.destroy();
    });
  };

  const serve = (ws: WebSocket, grant: StreamGrant, request: StreamRequest) => {
    const conversation = { userId: grant.userId, conversationId: grant.conversationId };
    // A suspension or removal closes it at once (StreamEviction).
    const unregister = registerLocalStream(grant.userId, () => ws.close(CLOSE.unauthorized, REFUSALS.revoked));
    ws.once('close', unregister);
    let answered = true;
    let checking = false;
    const pinger = setInterval(() => {
      if (!answered) {
        ws.close(CLOSE.idle, `No pong within ${Math.round(pingMs / 1000)} s`);
        setTimeout(() => ws.terminate(), 1000).unref();
        return;
      }
      answered = false;
      ws.ping();
      if (checking) return;
      checking = true;
      services.streamAccess
        .stillValid(grant, request, options.allowedOrigins)
        .then((valid) => void (valid || ws.close(CLOSE.unauthorized, REFUSALS.revoked)))
        .catch((err: unknown) => logger.error('stream.recheck-failed', { error: err as Error }))
        .finally(() => (checking = false));
    }, pingMs);
    pinger.unref();
    ws.on('pong', () => (answered = true));
    // User messages, relayed one after the other in the order sent (ws answers pings on its own).
    let relaying = Promise.resolve();
    ws.on('message', (data, isBinary) => {
      relaying = relaying
        .then(async () => {
          if (ws.readyState !== ws.OPEN) return;
          const outcome = await relayClientMessage(isBinary ? '' : String(data), conversation, relayServices);
          if (outcome) ws.close(outcome.code, outcome.reason);
        })
        .catch((err: unknown) => {
          logger.error('stream.relay-failed', { conversationId: conversation.conversationId, error: err as Error });
          ws.close(CLOSE.internalError, 'Internal error');
        });
    });
    let subscription: StreamSubscription | undefined;
    let closed = false;
    ws.on('close', () => {
      closed = true;
      clearInterval(pinger);
      subscription?.close();
    });
    ws.on('error', () => ws.terminate());
    const client = {
      send: (message: string) =>
        new Promise<void>((resolve, reject) => ws.send(message, (err) => (err ? reject(err) : resolve()))),
      fail: (err: unknown) => {
        if (ws.readyState !== ws.OPEN) return; // the client left mid-send: nothing failed
        logger.error('stream.delivery-failed', { conversationId: conversation.conversationId, error: err as Error });
        ws.close(CLOSE.internalError, 'Delivery failed');
      },
    };
    resolveResendMode(grant.query, services.eventHub.events(), conversation)
      .then((query) => services.eventHub.subscribe(conversation, (end) => startAfter(query, end), client))
      .then((s) => {
        subscription = s;
        if (closed) s.close();
      })
      .catch((err: unknown) => client.fail(err));
  };

  server.on('upgrade', onUpgrade);
  return {
    pending,
    close: async () => {
      server.off('upgrade', onUpgrade);
      held.close();
      const open = [...wss.clients];
      for (const ws of open) ws.close(CLOSE.goingAway, 'Server shutting down');
      await Promise.race([
        Promise.all(
          open.map((ws) => new Promise((r) => (ws.readyState === ws.CLOSED ? r(null) : ws.once('close', r)))),
        ),
        new Promise((r) => setTimeout(r, 2000).unref()),
      ]);
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
