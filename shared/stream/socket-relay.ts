import type { Services } from '#shared/services.ts';
import { relayClientMessage } from '#shared/stream/client-messages.ts';
import { socketStreamOf } from '#shared/stream/socket-stream.ts';
import type { Adapters } from '#shared/wiring/adapters.ts';

/**
 * A message a client sent on the AWS stream (`$default`): relayed as on the local socket
 * (`relayClientMessage`, the `sendMessage` operation). API Gateway cannot close with a code of
 * ours, so a refused message is answered on the socket instead (the route returns its response):
 * `{"error": {"code": 4409, "reason": "..."}}`, the code and reason the local socket closes with.
 */
export async function relaySocketMessage(
  connectionId: string,
  body: string,
  services: Services,
  adapters: Adapters,
): Promise<{ statusCode: number; body?: string }> {
  const stream = socketStreamOf(services, adapters);
  // A connection opened without credentials: this message is its auth frame (first-message auth).
  if ((await stream.authenticatePending(connectionId, body)) !== 'not-pending') return { statusCode: 200 };
  const conversation = await stream.connectionOf(connectionId);
  if (!conversation)
    return {
      statusCode: 200,
      body: JSON.stringify({ error: { code: 4404, reason: 'This connection is not open for a conversation' } }),
    };
  const outcome = await relayClientMessage(body, conversation, services);
  return outcome ? { statusCode: 200, body: JSON.stringify({ error: outcome }) } : { statusCode: 200 };
}
