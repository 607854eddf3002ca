import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import type { APIGatewayProxyResult, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { bridgeSocketConnectFunction } from '#shared/functions.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { warmPool } from '#shared/services/warm-pool.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/** `$connect` carries the upgrade request's headers and query (the WebSocket event type leaves them out). */
type ConnectEvent = APIGatewayProxyWebsocketEventV2 & {
  headers?: Record<string, string | undefined>;
  queryStringParameters?: Record<string, string | undefined>;
};

/**
 * The bridge socket's `$connect`: `?sandbox_id=<id>` with the sandbox's session key in
 * `X-Session-API-Key` (never in the URL, which access logs keep); or, for a warm-pool standby's pool
 * socket, `?standby_id=<id>` with its pool credential there. Never both: each credential is checked
 * only against its own kind of record, so a pool credential reaches no sandbox and a sandbox's key no
 * standby. Any answer but 200 refuses the connection; the program then long-polls.
 */
export const handler = awsFunction(
  bridgeSocketConnectFunction,
  { sandboxBridge, warmPool },
  async (event: ConnectEvent, { sandboxBridge, warmPool }): Promise<APIGatewayProxyResult> => {
    const query = event.queryStringParameters ?? {};
    const key = keyFromHeaders(event.headers ?? {});
    const connectionId = event.requestContext.connectionId;
    const ok =
      query.standby_id !== undefined
        ? query.sandbox_id === undefined && (await warmPool.connectSocket(query.standby_id, key, connectionId))
        : await sandboxBridge.connectSocket(query.sandbox_id, key, connectionId);
    return ok ? { statusCode: 200, body: '' } : { statusCode: 401, body: 'Unauthorized' };
  },
);
