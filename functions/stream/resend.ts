import { streamResendFunction } from '#shared/functions.ts';
import type { ResendRequest } from '#shared/stream/resend-trigger.ts';
import { socketStreamOf } from '#shared/stream/socket-stream.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { eventStore } from '#shared/wiring/aws/events.ts';
import { streamConnectionStore, streamPush } from '#shared/wiring/aws/stream.ts';
import { streamResendTrigger } from '#shared/wiring/aws/stream-resend.ts';

/**
 * Invoked asynchronously by `$connect`: sends a new connection what it asked for once it is open.
 * A replay longer than one invocation stops within the function's timeout (the context's remaining
 * time) and invokes this function again to go on from `sentSeq`.
 */
export const handler = awsFunction(
  streamResendFunction,
  { eventStore, streamConnectionStore, streamPush, streamResendTrigger },
  {},
  (event: ResendRequest, services, adapters, context) =>
    socketStreamOf(services, adapters).resend(event, context && (() => context.getRemainingTimeInMillis())),
);
