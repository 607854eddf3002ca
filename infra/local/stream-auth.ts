import type { WebSocket } from 'ws';
import { logger } from '#shared/logging.ts';
import type { StreamGrant, StreamRequest } from '#shared/stream/access.ts';
import {
  AUTH_FAILED_CLOSE,
  AUTH_FAILED_REASON,
  authKeyOf,
  FIRST_MESSAGE_AUTH_MS,
  withAuthKey,
} from '#shared/stream/first-message-auth.ts';
import { CLOSE } from '#shared/stream/messages.ts';
import type { LocalServices } from '#shared/wiring/local.ts';

/**
 * Sockets open but not yet authenticated, by the conversation id their path names (as written).
 * The hook for the per-conversation socket caps: they count these beside the open streams.
 */
export type PendingSockets = Map<string, Set<WebSocket>>;

export const pendingCount = (pending: PendingSockets, conversationId?: string): number =>
  conversationId === undefined
    ? [...pending.values()].reduce((n, set) => n + set.size, 0)
    : (pending.get(conversationId)?.size ?? 0);

/**
 * Waits (at most `waitMs`) for the first frame of a socket that came without credentials. A
 * well-formed auth frame whose key grants this conversation resolves with the grant and the request
 * as judged (the key as a header, so later re-checks judge it alike). A missing, malformed or wrong
 * frame closes the socket with 4001 "Authentication failed" (the agent server's answer, whatever the
 * cause: nothing tells a prober which keys exist) and resolves null; a conversation that is not the
 * key owner's also closes 4001. Frames that came after the auth frame while it was judged are
 * returned (`later`): the caller hands them to its message handler, in order.
 */
export function awaitFirstMessageAuth(
  ws: WebSocket,
  request: StreamRequest,
  options: {
    services: LocalServices;
    allowedOrigins: readonly string[];
    pending: PendingSockets;
    waitMs?: number;
  },
): Promise<{ grant: StreamGrant; request: StreamRequest; later: { data: unknown; isBinary: boolean }[] } | null> {
  const { pending } = options;
  let set = pending.get(request.conversationId);
  if (!set) {
    set = new Set();
    pending.set(request.conversationId, set);
  }
  set.add(ws);
  const done = () => {
    set.delete(ws);
    if (set.size === 0 && pending.get(request.conversationId) === set) pending.delete(request.conversationId);
  };
  const later: { data: unknown; isBinary: boolean }[] = [];
  const keep = (data: unknown, isBinary: boolean) => void later.push({ data, isBinary });
  return new Promise((resolve) => {
    const fail = (why: string) => {
      logger.info('stream.auth-failed', { why });
      if (ws.readyState === ws.OPEN) ws.close(AUTH_FAILED_CLOSE, AUTH_FAILED_REASON);
      resolve(null);
    };
    const timer = setTimeout(() => {
      ws.off('message', onFirst);
      done();
      fail('no auth frame in time');
    }, options.waitMs ?? FIRST_MESSAGE_AUTH_MS);
    timer.unref();
    ws.once('close', () => {
      clearTimeout(timer);
      done();
      resolve(null);
    });
    const onFirst = (data: unknown, isBinary: boolean) => {
      clearTimeout(timer);
      // Frames after this one (a user message sent right after auth) are kept until the stream serves the socket.
      ws.on('message', keep);
      const key = isBinary ? null : authKeyOf(String(data));
      if (!key) {
        done();
        return fail('first frame is not an auth frame');
      }
      const judged = withAuthKey(request, key);
      options.services.streamAccess
        .authorize(judged, options.allowedOrigins)
        .then((verdict) => {
          done();
          if (ws.readyState !== ws.OPEN) return resolve(null);
          ws.off('message', keep);
          if (verdict.allowed) return resolve({ grant: verdict, request: judged, later });
          // A malformed id or query is the caller's mistake, not a credential's: it keeps its code.
          if (verdict.status === 400) {
            ws.close(verdict.code, verdict.reason);
            return resolve(null);
          }
          fail(`refused ${verdict.status}`);
        })
        .catch((err: unknown) => {
          ws.off('message', keep);
          done();
          logger.error('stream.authorize-failed', { error: err as Error });
          if (ws.readyState === ws.OPEN) ws.close(CLOSE.internalError, 'Internal error');
          resolve(null);
        });
    };
    ws.once('message', onFirst);
  });
}
