import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { matchRoute } from '#shared/http/router.ts';
import { logger } from '#shared/logging.ts';

const reply = (
  status: number,
  detail: string,
  requestId: string,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 => ({
  statusCode: status,
  headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
  body: JSON.stringify({ detail }),
});

/**
 * The HTTP API's `$default` route: API Gateway sends here every request no route matched, and
 * this answers it as the local gateway does, from the same route table: 405 with `allow` when
 * the path exists under other methods, else 404; OPTIONS gets 204.
 */
export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const requestId = event.requestContext?.requestId ?? 'unknown';
  const method = event.requestContext?.http?.method ?? 'GET';
  const match = matchRoute(method, event.rawPath ?? '/');
  // An OPTIONS that API Gateway's CORS did not answer (no origins configured, or one not allowed):
  // 204 without CORS headers, as the local gateway answers it.
  if (method === 'OPTIONS') return { statusCode: 204, headers: { 'x-request-id': requestId }, body: '' };
  // 'found' means API Gateway matched no route although the table has one (e.g. an encoded `/` in
  // a parameter): it cannot be served here, so it is not found either.
  const result =
    match.kind === 'method-not-allowed'
      ? reply(405, 'Method Not Allowed', requestId, { allow: match.allowed.join(', ') })
      : reply(404, 'Not Found', requestId);
  logger.info('request', { requestId, route: '$default', method, path: event.rawPath, status: result.statusCode });
  return result;
}
