import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import type { APIGatewayProxyResult, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { bridgeSocketConnectFunction } from '#shared/functions.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

/** `$connect` carries the upgrade request's headers and query (the WebSocket event type leaves them out). */
type ConnectEvent = APIGatewayProxyWebsocketEventV2 & {
  headers?: Record<string, string | undefined>;
  queryStringParameters?: Record<string, string | undefined>;
};

/**
 * The bridge socket's `$connect`: `?sandbox_id=<id>` with the sandbox's session key in
 * `X-Session-API-Key` (never in the URL, which access logs keep). Any answer but 200 refuses the
 * connection; the program then long-polls.
 */
export const handler = awsFunction(
  bridgeSocketConnectFunction,
  { sandboxStore },
  { sandboxBridge },
  async (event: ConnectEvent, { sandboxBridge }): Promise<APIGatewayProxyResult> => {
    const ok = await sandboxBridge.connectSocket(
      event.queryStringParameters?.sandbox_id,
      keyFromHeaders(event.headers ?? {}),
      event.requestContext.connectionId,
    );
    return ok ? { statusCode: 200, body: '' } : { statusCode: 401, body: 'Unauthorized' };
  },
);
