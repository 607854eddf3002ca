import { authorizeRequest, CROSS_SITE_REFUSAL, type AuthDeps } from '#shared/auth/authorizer.ts';
import { isConversationKey } from '#shared/auth/conversation-keys.ts';
import { requestRate } from '#shared/auth/request-rate.ts';
import type { ConversationStore } from '#shared/conversations/conversation-store.ts';
import type { Plans } from '#shared/plans/model.ts';
import { conversationIdSchema } from '#shared/protocol.ts';
import { CLOSE, streamQuerySchema, type StreamQuery } from '#shared/stream/messages.ts';
import { CLOSE_TOO_MANY } from '#shared/stream/socket-caps.ts';
import type { StreamTickets } from '#shared/stream/tickets.ts';

export interface StreamAccessDeps extends AuthDeps {
  tickets: StreamTickets;
  conversations: Pick<ConversationStore, 'get'>;
  /**
   * An open counts as one of the user's authenticated requests (the plan's `requests_per_user_per_minute`):
   * the seconds until one is allowed, or undefined. Taken once the user is known and before the
   * conversation is read, so an open in a loop is refused for the price of a key check. Not on re-checks.
   */
  openRate?: (userId: string, plan: string | undefined) => number | undefined;
}

/** What a stream request carries: the path's conversation id as written, the query, the headers (cookie included). */
export interface StreamRequest {
  conversationId: string;
  query: Record<string, string | undefined>;
  headers: Record<string, string | undefined>;
}

export interface StreamGrant {
  allowed: true;
  userId: string;
  conversationId: string;
  via: 'ticket' | 'conversation' | 'key' | 'session' | 'token';
  query: StreamQuery;
  /** The plan of the caller's organization (its socket caps); undefined: the default plan. */
  plan?: string;
}

/** Why a stream may not open: the HTTP status ($connect answers it) and the close code with its reason (the local socket sends them). */
export interface StreamRefusal {
  allowed: false;
  status: 400 | 401 | 403 | 404 | 429;
  code: (typeof CLOSE)[keyof typeof CLOSE] | typeof CLOSE_TOO_MANY;
  /** At most 123 bytes: a WebSocket close reason's limit. */
  reason: string;
  /** For a 429: the seconds until an open is allowed again. */
  retryAfter?: number;
}

const refuse = (status: StreamRefusal['status'], reason: string): StreamRefusal => ({
  allowed: false,
  status,
  code: {
    400: CLOSE.badRequest,
    401: CLOSE.unauthorized,
    403: CLOSE.forbidden,
    404: CLOSE.notFound,
    429: CLOSE_TOO_MANY,
  }[status],
  reason,
});

/** What an API key of a user looks like (`acs_<16 hex>_...`), also as one of repeated values joined by commas: never accepted from a URL. */
export const USER_KEY = /(?:^|,)\s*acs_[0-9a-f]{16}_/;

export const REFUSALS = {
  userKeyInUrl: 'A user API key is refused in a URL (logs keep URLs): use the cookie, the session_api_key or a ticket',
  ticket: 'The ticket is invalid, expired or used',
  otherConversation: 'This credential is for another conversation',
  crossSite: 'Cross-site: the session cookie counts only from an allowed Origin',
  unauthorized: 'Unauthorized',
  notFound: 'Conversation not found',
  revoked: 'The credentials or the conversation are no longer valid',
  suspended: 'The account or its organization is suspended',
} as const;

/**
 * Who may open which conversation's stream, decided the same way by the local gateway's upgrade
 * and the AWS `$connect` handler. Credentials, the first present wins:
 * 1. `ticket` in the query: single use, for its own conversation (`StreamTickets`);
 * 2. `session_api_key` in the query: the conversation-scoped key, for its own conversation only;
 * 3. what every HTTP route accepts (`authorizeRequest`): a key in `X-Session-API-Key` /
 *    `Authorization` (non-browser clients), or the session cookie, which counts only with an
 *    allowed Origin (browsers send Origin on every WebSocket handshake: a cross-site page cannot
 *    open a stream with the user's cookie).
 * A user API key anywhere in the query is refused, whatever else the request carries. The
 * conversation must be the user's (404 otherwise, as for a foreign id on HTTP).
 */
export async function authorizeStream(
  input: StreamRequest,
  deps: StreamAccessDeps,
): Promise<StreamGrant | StreamRefusal> {
  // First, whatever else is wrong: the caller must learn not to put the key in URLs.
  if (Object.values(input.query).some((v) => v !== undefined && USER_KEY.test(v)))
    return refuse(403, REFUSALS.userKeyInUrl);
  const id = conversationIdSchema.safeParse(input.conversationId);
  if (!id.success) return refuse(400, 'conversation_id must be a UUID (32 hex characters, dashes optional)');
  const conversationId = id.data;
  const parsed = streamQuerySchema.safeParse(input.query);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return refuse(400, `${issue.path.join('.')}: ${issue.message}`.slice(0, 120));
  }
  const query = parsed.data;

  let userId: string;
  let via: StreamGrant['via'];
  let plan: string | undefined;
  if (query.ticket !== undefined) {
    const claim = await deps.tickets.redeem(query.ticket);
    if (!claim) return refuse(401, REFUSALS.ticket);
    if (claim.conversationId !== conversationId) return refuse(403, REFUSALS.otherConversation);
    ({ userId } = claim);
    via = 'ticket';
  } else if (query.session_api_key !== undefined) {
    const claim = isConversationKey(query.session_api_key)
      ? await deps.conversationKeys.verify(query.session_api_key)
      : null;
    if (!claim) return refuse(401, REFUSALS.unauthorized);
    if (claim.conversationId !== conversationId) return refuse(403, REFUSALS.otherConversation);
    ({ userId } = claim);
    via = 'conversation';
  } else {
    const auth = await authorizeRequest('GET', input.headers, deps);
    // A refused token or a suspended account (401, its reason); a cross-site cookie or two session cookies (403).
    if (auth.refusal && auth.refusalStatus === 401) return refuse(401, auth.refusal.slice(0, 120));
    if (auth.refusal) return refuse(403, auth.refusal === CROSS_SITE_REFUSAL ? REFUSALS.crossSite : auth.refusal);
    if (!auth.userId || !auth.via) return refuse(401, REFUSALS.unauthorized);
    if (auth.via === 'conversation' && auth.conversationId !== conversationId)
      return refuse(403, REFUSALS.otherConversation);
    userId = auth.userId;
    via = auth.via;
    plan = auth.plan;
  }
  // A suspended person's (or organization's) streams do not open, whatever the credential.
  if (via === 'ticket' || via === 'conversation') {
    const { user, org } = await deps.accounts.forUser(userId);
    if (user.status !== 'active' || org.status !== 'active') return refuse(401, REFUSALS.suspended);
    plan = org.plan;
  }
  const retryAfter = deps.openRate?.(userId, plan);
  if (retryAfter !== undefined)
    return {
      ...refuse(429, "Too many requests: streams opened count against your plan's requests per minute"),
      retryAfter,
    };
  // The owner's, still there: a ticket or key may outlive its conversation by a moment.
  const conversation = await deps.conversations.get(userId, conversationId);
  if (!conversation || conversation.userId !== userId) return refuse(404, REFUSALS.notFound);
  return { allowed: true, userId, conversationId, via, query, ...(plan ? { plan } : {}) };
}

/** `authorizeStream` over one function's services (Services.streamAccess): the allowed origins come from its configuration. */
export class StreamAccess {
  constructor(
    private readonly deps: Omit<StreamAccessDeps, 'allowedOrigins' | 'openRate'>,
    /** The plans, for the request rate an open counts against (absent: opens are not rate-limited). */
    private readonly plans?: () => Plans,
  ) {}

  /** Whether a stream may open: a grant, or why not (an open counts as one of the user's requests). */
  authorize(input: StreamRequest, allowedOrigins: readonly string[]): Promise<StreamGrant | StreamRefusal> {
    const plans = this.plans;
    const openRate = plans
      ? (userId: string, plan: string | undefined) =>
          requestRate.take(userId, plans().plan(plan).requests_per_user_per_minute)
      : undefined;
    return authorizeStream(input, { ...this.deps, allowedOrigins, ...(openRate ? { openRate } : {}) });
  }

  /**
   * Whether an open stream may stay open: its credentials, checked again, still give the same user
   * and conversation (a revoked key, an ended session or a deleted conversation end it, as they end
   * HTTP access). A ticket was used up at the open; its stream holds while the conversation is the user's.
   */
  async stillValid(grant: StreamGrant, input: StreamRequest, allowedOrigins: readonly string[]): Promise<boolean> {
    if (grant.via === 'ticket')
      return (await this.deps.conversations.get(grant.userId, grant.conversationId))?.userId === grant.userId;
    // A re-check is not a request of the user's: no rate.
    const again = await authorizeStream(input, { ...this.deps, allowedOrigins });
    return again.allowed && again.userId === grant.userId && again.conversationId === grant.conversationId;
  }
}
