import type { APIGatewayRequestAuthorizerEventV2, APIGatewaySimpleAuthorizerWithContextResult } from 'aws-lambda';
import { authorizeRequest, type AuthorizerContext } from '#shared/auth/authorizer.ts';
import { authorizerFunction } from '#shared/functions.ts';
import { clientAddress } from '#shared/http/client-address.ts';
import { allowedOrigins } from '#shared/http/cors.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { logger } from '#shared/logging.ts';
import { accounts } from '#shared/services/accounts.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { conversationKeys } from '#shared/services/conversation-keys.ts';
import { sessions } from '#shared/services/sessions.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { routes } from '#shared/routes.ts';

const origins = allowedOrigins();
/** Route keys (`POST /api/authenticate`) whose calls are counted per client address before any credential is read. */
const limitedPerAddress = new Set(
  (routes as readonly RouteDef[]).filter((r) => r.limitedPerAddress).map((r) => `${r.method} ${r.path}`),
);

/**
 * HTTP API REQUEST authorizer (simple responses). It hands the caller's user id (and, for a
 * conversation-scoped key, its conversation) to the route, or an empty one for missing or bad
 * credentials: the route's wrapper then answers the documented 401 `{"detail": "Unauthorized"}`,
 * where a deny here would give API Gateway's own 403 body. Payload 2.0 moves cookies out of the
 * headers into `cookies`.
 */
export const handler = awsFunction(
  authorizerFunction,
  { apiKeys, sessions, conversationKeys, accounts },
  async (
    event: APIGatewayRequestAuthorizerEventV2,
    { apiKeys, sessions, conversationKeys, accounts },
    adapters,
  ): Promise<APIGatewaySimpleAuthorizerWithContextResult<AuthorizerContext>> => {
    try {
      const headers = { ...event.headers, ...(event.cookies?.length ? { cookie: event.cookies.join('; ') } : {}) };
      const limited = limitedPerAddress.has(event.routeKey);
      const context = await authorizeRequest(
        event.requestContext.http.method,
        headers,
        {
          apiKeys,
          sessions,
          conversationKeys,
          accounts,
          oidc: adapters.oidc,
          allowedOrigins: origins,
          plans: adapters.plans,
          ...(limited ? { addressLimiter: adapters.signInLimiter } : {}),
        },
        limited ? clientAddress(event.headers ?? {}, event.requestContext.http.sourceIp) : undefined,
      );
      return { isAuthorized: true, context };
    } catch (err) {
      logger.error('Authorizer failed', { error: err as Error });
      return { isAuthorized: true, context: { userId: '' } };
    }
  },
  { adapters: ['oidc', 'plans', 'signInLimiter'] },
);
