import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { forbidden } from '#shared/http/errors.ts';
import type { RouteDef } from '#shared/http/route.ts';

/**
 * What a route lets each kind of principal do, from its declaration: a conversation-scoped key
 * only on routes that declare `conversationKey`, and only for the conversation named there (or, on
 * an `'own'` route, the operation's answer is about the key's conversation alone); on
 * routes that manage credentials (`managesCredentials`), a session writes only with a verified Origin
 * (and reads from a page of this origin, the web console).
 * Runs after validation, so the conversation id is already normalised (the wrapper answers 401
 * for missing credentials before anything else).
 */
export function checkPrincipal(
  route: RouteDef,
  auth: AuthorizerContext | undefined,
  params: unknown,
  query: unknown,
): void {
  if (route.auth !== 'user' || !auth) return;
  if (auth.via === 'conversation') {
    const field = route.conversationKey;
    if (!field) throw forbidden("A conversation key is valid only on its own conversation's routes");
    if (field === 'own') return; // the operation answers about auth.conversationId only
    // `key`: the path names no conversation; one named in the query must still be the key's own.
    const named =
      field === 'key'
        ? ((query as Record<string, unknown> | undefined)?.conversation_id ?? auth.conversationId)
        : ((params as Record<string, unknown> | undefined)?.[field] ??
          (query as Record<string, unknown> | undefined)?.[field]);
    const id = typeof named === 'string' ? named.replaceAll('-', '').toLowerCase() : undefined;
    if (id !== auth.conversationId) throw forbidden('A conversation key is valid only for its own conversation');
  }
  // Reads of credential routes (the key list, which holds no key) also count from a page of this
  // origin: browsers send no Origin on a same-origin GET, and the authorizer has already refused a
  // session read unless Sec-Fetch-Site said same-origin. Writes always need the Origin.
  if (auth.via === 'session' && route.managesCredentials && route.method !== 'GET' && !auth.originVerified) {
    throw forbidden('Managing keys with the session cookie needs an Origin header of an allowed origin');
  }
}
