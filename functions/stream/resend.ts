import { streamResendFunction } from '#shared/functions.ts';
import type { ResendRequest } from '#shared/stream/resend-trigger.ts';
import { socketStreamOf } from '#shared/stream/socket-stream.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/**
 * Invoked asynchronously by `$connect`: sends a new connection what it asked for once it is open.
 * A replay longer than one invocation stops within the function's timeout (the context's remaining
 * time) and invokes this function again to go on from `sentSeq`.
 */
export const handler = awsFunction(
  streamResendFunction,
  {},
  (event: ResendRequest, services, adapters, context) =>
    socketStreamOf(services, adapters).resend(event, context && (() => context.getRemainingTimeInMillis())),
  { adapters: ['eventStore', 'streamConnectionStore', 'streamPush', 'streamResendTrigger'] },
);
