import { streamDisconnectFunction } from '#shared/functions.ts';
import { socketStreamOf } from '#shared/stream/socket-stream.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/** The WebSocket API's `$disconnect` (client close, idle 10 min, the 2-hour limit). */
export const handler = awsFunction(
  streamDisconnectFunction,
  {},
  async (event: { requestContext: { connectionId: string } }, services, adapters) => {
    await socketStreamOf(services, adapters).disconnect(event.requestContext.connectionId);
    return { statusCode: 200 };
  },
  { adapters: ['streamConnectionStore'] },
);
