import { LambdaResendTrigger } from '#shared/stream/lambda-resend-trigger.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/** The asynchronous invoke of the resend function: the Lambda client, only in `$connect`'s bundle. */
export const streamResendTrigger: Builder<'streamResendTrigger'> = () =>
  new LambdaResendTrigger(requireEnv('STREAM_RESEND_FUNCTION', 'the stream resend function'));
