import { lambdaEvent } from '#shared/lambda-event.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/** The refill after a claim: an asynchronous invoke of the pool's refill function (the claim does not wait for it). */
export const poolRefill: Builder<'poolRefill'> = () => {
  const send = lambdaEvent<{ specId: string }>(
    requireEnv('POOL_REFILL_FUNCTION', 'the warm pool refill function'),
    'the pool refill function',
  );
  return { refill: (specId) => send({ specId }) };
};
