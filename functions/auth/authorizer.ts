import type { APIGatewayRequestAuthorizerEventV2, APIGatewaySimpleAuthorizerWithContextResult } from 'aws-lambda';
import { authorizeHeaders } from '#shared/auth/authorizer.ts';
import { authorizerFunction } from '#shared/functions.ts';
import type { AuthorizerContext } from '#shared/http/wrapper.ts';
import { logger } from '#shared/logging.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { keyStore } from '#shared/wiring/aws/keys.ts';

/**
 * HTTP API REQUEST authorizer (simple responses). It hands the key's user id to the route, or an
 * empty one for a missing, unknown or revoked key: the route's wrapper then answers the documented
 * 401 `{"detail": "Unauthorized"}`, where a deny here would give API Gateway's own 403 body.
 */
export const handler = awsFunction(
  authorizerFunction,
  { keyStore },
  async (event: APIGatewayRequestAuthorizerEventV2, { apiKeys }): Promise<APIGatewaySimpleAuthorizerWithContextResult<AuthorizerContext>> => {
    try {
      const principal = await authorizeHeaders(event.headers ?? {}, apiKeys);
      return { isAuthorized: true, context: { userId: principal?.userId ?? '' } };
    } catch (err) {
      logger.error('Authorizer failed', { error: err as Error });
      return { isAuthorized: true, context: { userId: '' } };
    }
  },
);
