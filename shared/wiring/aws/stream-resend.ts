import { LambdaResendTrigger } from '#shared/stream/lambda-resend-trigger.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/**
 * The asynchronous invoke of the resend function: the Lambda client, only in the bundles of `$connect`,
 * `$default` (first-message auth) and the resend function itself (its continuation).
 */
export const streamResendTrigger: Builder<'streamResendTrigger'> = () =>
  new LambdaResendTrigger(requireEnv('STREAM_RESEND_FUNCTION', 'the stream resend function'));
