import { streamResendFunction } from '#shared/functions.ts';
import type { ResendRequest } from '#shared/stream/resend-trigger.ts';
import { socketStreamOf } from '#shared/stream/socket-stream.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { streamConnectionStore, streamPush } from '#shared/wiring/aws/stream.ts';

/** Invoked asynchronously by `$connect`: sends a new connection what it asked for once it is open. */
export const handler = awsFunction(
  streamResendFunction,
  { eventStore, streamConnectionStore, streamPush },
  {},
  (event: ResendRequest, services, adapters) => socketStreamOf(services, adapters).resend(event),
);
