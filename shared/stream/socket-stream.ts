import type { Plan, Plans } from '#shared/plans/model.ts';
import type { ConversationRef, EventStore } from '#shared/events/event-store.ts';
import { logger } from '#shared/logging.ts';
import type { StreamAccess, StreamRequest } from '#shared/stream/access.ts';
import type { ConnectionPush } from '#shared/stream/connection-push.ts';
import {
  authKeyOf,
  carriesCredentials,
  FIRST_MESSAGE_AUTH_MS,
  withAuthKey,
} from '#shared/stream/first-message-auth.ts';
import { conversationIdSchema } from '#shared/protocol.ts';
import type { ConnectionStore } from '#shared/stream/connection-store.ts';
import { startAfter } from '#shared/stream/messages.ts';
import { resolveResendMode } from '#shared/stream/resend-since.ts';
import { allowedOrigins } from '#shared/http/cors.ts';
import { clientAddress } from '#shared/http/client-address.ts';
import { MAX_PENDING_SOCKETS_PER_IP, tooManyPending } from '#shared/stream/socket-caps.ts';
import type { Services } from '#shared/services.ts';
import { PushDelivery } from '#shared/stream/push-delivery.ts';
import { type ReplayRate, replayRate } from '#shared/stream/replay-rate.ts';
import type { Adapters } from '#shared/wiring/adapters.ts';
import { lazy } from '#shared/wiring/lazy.ts';
import type { ResendRequest, ResendTrigger } from '#shared/stream/resend-trigger.ts';

/** API Gateway ends every WebSocket connection after 2 hours; its item is kept no longer (TTL). */
export const CONNECTION_MAX_SECONDS = 2 * 60 * 60;

/**
 * The channel of the WebSocket API that carries conversation events. CloudFront turns
 * `/sockets/events/{conversation_id}` into `?channel=events&id={conversation_id}` on the API's
 * stage (infra/constructs/front.ts); other channels are for other streams.
 */
export const EVENTS_CHANNEL = 'events';

/**
 * A client's keep-alive, `{"action": "ping"}`: on AWS the WebSocket API's `ping` route takes it
 * with a mock integration (10 idle minutes close a connection there); locally it is ignored.
 */
export const PING_ACTION = 'ping';

/** What a `$connect` carries that matters here (API Gateway's WebSocket event, payload 1.0 style: cookies in the Cookie header). */
export interface ConnectRequest {
  connectionId: string;
  query: Record<string, string | undefined>;
  headers: Record<string, string | undefined>;
  /** The connection's source address as API Gateway saw it (CloudFront's, behind the distribution). */
  sourceIp?: string | undefined;
}

/** The answer `$connect` returns: 200 opens the connection, anything else refuses the handshake with that status. */
export interface ConnectResult {
  statusCode: number;
  body?: string;
}

/**
 * The event stream over API Gateway's WebSocket API: `$connect` decides access with the same rule
 * as the local socket (shared/stream/access.ts), records the connection at its start position
 * (`after_seq`, or 0 with `resend_all`, or the committed end) and starts the resend step, which
 * sends once the connection is open; `$disconnect` forgets it. Live events come from the ingest
 * function's feed (`PushDelivery`).
 */
export class SocketStream {
  /** Each dependency is read when first used: a function builds only the adapters its path needs (and its declaration covers). */
  constructor(
    private readonly deps: {
      readonly access: StreamAccess;
      readonly connections: ConnectionStore;
      readonly events: EventStore;
      readonly resendTrigger: ResendTrigger;
      readonly delivery: PushDelivery;
      readonly allowedOrigins: readonly string[];
      /** The plans (a grant names its organization's: the socket caps). */
      readonly plans: Plans;
      /** Drops a pending connection whose auth failed or never came. */
      readonly push: ConnectionPush;
    },
    private readonly now: () => Date = () => new Date(),
    /** Stream opens with history per user, counted per container (shared/stream/replay-rate.ts). */
    private readonly replays: ReplayRate = replayRate,
  ) {}

  async connect(r: ConnectRequest): Promise<ConnectResult> {
    const { channel, id, ...query } = r.query;
    if (channel !== EVENTS_CHANNEL) return { statusCode: 404, body: 'No such stream' };
    if (!carriesCredentials({ query, headers: r.headers })) {
      // First-message auth: open now, wait for `{"type": "auth", ...}` on `$default` until the deadline.
      if (!conversationIdSchema.safeParse(id ?? '').success)
        return { statusCode: 400, body: 'conversation_id must be a UUID (32 hex characters, dashes optional)' };
      const deadline = new Date(this.now().getTime() + FIRST_MESSAGE_AUTH_MS).toISOString();
      // No user is known yet: held to a number per client address, as the local gateway holds them.
      const address = clientAddress(r.headers, r.sourceIp);
      const pending = { conversationId: id!, connectionId: r.connectionId, address, query, deadline };
      if (!(await this.deps.connections.addPending(pending, MAX_PENDING_SOCKETS_PER_IP))) {
        logger.info('stream.refused', { status: 429, reason: 'pending per address' });
        return { statusCode: 429, body: tooManyPending() };
      }
      return { statusCode: 200 };
    }
    return this.open(r.connectionId, { conversationId: id ?? '', query, headers: r.headers });
  }

  /**
   * A message on a connection that is still pending: its auth frame. Accepted, the connection is
   * recorded as `$connect` records a credentialed one and its resend starts; refused (or past its
   * deadline), the connection is dropped: on AWS the client sees a plain close, not 4001 (API
   * Gateway closes with no code of ours). `not-pending` for any other connection.
   */
  async authenticatePending(connectionId: string, body: string): Promise<'not-pending' | 'opened' | 'refused'> {
    const pending = await this.deps.connections.takePending(connectionId);
    if (!pending) return 'not-pending';
    const key = Date.parse(pending.deadline) >= this.now().getTime() ? authKeyOf(body) : null;
    const result = key
      ? await this.open(
          connectionId,
          withAuthKey({ conversationId: pending.conversationId, query: pending.query, headers: {} }, key),
        )
      : { statusCode: 401 };
    if (result.statusCode === 200) return 'opened';
    logger.info('stream.auth-failed', { status: result.statusCode });
    await this.deps.push.drop(connectionId);
    return 'refused';
  }

  /** The sweep's part: pending connections past their deadline are dropped and forgotten. */
  async sweepPending(now: Date): Promise<number> {
    const expired = await this.deps.connections.expiredPending(now);
    for (const p of expired) {
      if (!(await this.deps.connections.takePending(p.connectionId))) continue; // authenticated meanwhile
      await this.deps.push.drop(p.connectionId);
    }
    return expired.length;
  }

  private async open(connectionId: string, request: StreamRequest): Promise<ConnectResult> {
    const r = { connectionId };
    const decision = await this.deps.access.authorize(request, this.deps.allowedOrigins);
    if (!decision.allowed) {
      logger.info('stream.refused', { status: decision.status, reason: decision.reason });
      return { statusCode: decision.status, body: decision.reason };
    }
    const conversation = { userId: decision.userId, conversationId: decision.conversationId };
    const capped =
      this.replays.take(decision.userId, decision.query) ??
      (await this.overCap(conversation, this.deps.plans.plan(decision.plan)));
    if (capped) {
      logger.info('stream.refused', { status: 429, reason: capped });
      return { statusCode: 429, body: capped };
    }
    const now = this.now();
    await this.deps.connections.add({
      conversation,
      connectionId: r.connectionId,
      sentSeq: startAfter(
        await resolveResendMode(decision.query, this.deps.events, conversation),
        await this.deps.events.lastSeq(conversation),
      ),
      connectedAt: now,
      expiresAt: new Date(now.getTime() + CONNECTION_MAX_SECONDS * 1000),
    });
    await this.deps.resendTrigger.request({ conversation, connectionId: r.connectionId });
    logger.info('stream.connected', { conversationId: conversation.conversationId, via: decision.via });
    return { statusCode: 200 };
  }

  /**
   * The plan's socket caps, counted in the table before the connection is recorded (the connection
   * being opened is not in it yet): per conversation exactly, per user through the `byUser` index,
   * which is eventually consistent, so racing `$connect`s of one user may pass the user cap by
   * about their number (docs/architecture.md). The reason, or undefined when within both.
   */
  private async overCap(conversation: ConversationRef, plan: Plan): Promise<string | undefined> {
    const upTo = Math.max(plan.max_stream_sockets_per_user, plan.max_stream_sockets_per_conversation);
    const open = await this.deps.connections.count(conversation, upTo);
    if (open.user >= plan.max_stream_sockets_per_user)
      return `Too many open streams: at most ${plan.max_stream_sockets_per_user} per user`;
    if (open.conversation >= plan.max_stream_sockets_per_conversation)
      return `Too many open streams: at most ${plan.max_stream_sockets_per_conversation} per conversation`;
    return undefined;
  }

  async disconnect(connectionId: string): Promise<void> {
    const conversation = await this.deps.connections.find(connectionId);
    if (conversation) await this.deps.connections.remove(conversation, connectionId);
    // A pending one closed before its auth frame gives its address's slot back now, not at the next sweep.
    else await this.deps.connections.takePending(connectionId);
  }

  /** The conversation a connection streams (for a message it sends). */
  connectionOf(connectionId: string): Promise<ConversationRef | undefined> {
    return this.deps.connections.find(connectionId);
  }

  /**
   * The resend step. `remainingMs` (the Lambda context's): it stops before the function's time runs
   * out, releases the connection's lease and asks for itself again with `resume`; the chain ends when
   * the connection is caught up or gone, or an invocation could send nothing.
   */
  async resend(r: ResendRequest, remainingMs?: () => number): Promise<void> {
    const budget = remainingMs && { remainingMs, resume: r.resume === true };
    const outcome = await this.deps.delivery.resend(r.conversation, r.connectionId, budget);
    const conversationId = r.conversation.conversationId;
    if (outcome === 'gone') logger.info('stream.resend-gone', { conversationId });
    if (outcome === 'stalled') logger.warn('stream.resend-stalled', { conversationId });
    if (outcome === 'more') {
      logger.info('stream.resend-continues', { conversationId });
      await this.deps.resendTrigger.request({
        conversation: r.conversation,
        connectionId: r.connectionId,
        resume: true,
      });
    }
  }
}

/**
 * The stream's AWS service over one function's services and adapters (shared/wiring/aws.ts
 * `awsFunction`). Built here, not in `servicesOf`, so only the stream's functions carry it.
 */
export function socketStreamOf(services: Services, adapters: Adapters): SocketStream {
  return new SocketStream(
    lazy({
      access: () => services.streamAccess,
      connections: () => adapters.streamConnectionStore,
      events: () => adapters.eventStore,
      resendTrigger: () => adapters.streamResendTrigger,
      delivery: () => new PushDelivery(adapters.streamConnectionStore, adapters.eventStore, adapters.streamPush),
      allowedOrigins: () => allowedOrigins(),
      plans: () => adapters.plans,
      push: () => adapters.streamPush,
    }),
  );
}

/** The parts of API Gateway's `$connect` event the stream reads (header names as sent: any case). */
export interface WebSocketConnectEvent {
  requestContext: { connectionId: string; identity?: { sourceIp?: string } };
  headers?: Record<string, string | undefined> | null;
  queryStringParameters?: Record<string, string | undefined> | null;
}

export function connectRequestOf(event: WebSocketConnectEvent): ConnectRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) headers[k.toLowerCase()] = v;
  return {
    connectionId: event.requestContext.connectionId,
    query: { ...event.queryStringParameters },
    headers,
    sourceIp: event.requestContext.identity?.sourceIp,
  };
}
