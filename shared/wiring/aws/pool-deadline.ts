import { awsJsonPost } from '#shared/aws-sign.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/**
 * A claim's binding deadline: Step Functions' StartExecution of the deadline state machine
 * (POOL_DEADLINE_STATE_MACHINE, infra/constructs/binding-deadline.ts: a Wait of 10 s, then the sweeper
 * invoked with the claim). One signed POST in Step Functions' JSON protocol (`shared/aws-sign.ts`), not
 * `@aws-sdk/client-sfn` (the functions that start sandboxes have a bundle budget). The execution's name is
 * the sandbox and generation: a repeated call for the same claim starts nothing new.
 */
export const poolDeadline: Builder<'poolDeadline'> = () => {
  const stateMachineArn = requireEnv('POOL_DEADLINE_STATE_MACHINE', "the warm pool's binding deadline");
  const startExecution = awsJsonPost('states', 'SFN', 'AWSStepFunctions.StartExecution', '1.0');
  return {
    async schedule(claim) {
      const res = await startExecution({
        stateMachineArn,
        name: `${claim.sandbox_id}-g${claim.generation}`,
        input: JSON.stringify({ bindingDeadline: claim }),
      });
      if (!res.ok)
        throw new Error(`Starting the binding deadline failed: status ${res.status} ${res.text.slice(0, 200)}`);
    },
  };
};
