import { lambdaEvent } from '#shared/lambda-event.ts';
import type { ResendRequest, ResendTrigger } from '#shared/stream/resend-trigger.ts';

/**
 * Lambda's Invoke API with the `Event` invocation type: queued, retried by Lambda, answered 202 at
 * once, so `$connect` returns before the resend sends anything (it cannot send before it returns).
 */
export class LambdaResendTrigger implements ResendTrigger {
  private readonly send: (r: ResendRequest) => Promise<void>;

  constructor(functionArn: string) {
    this.send = lambdaEvent<ResendRequest>(functionArn, 'the resend function');
  }

  request(r: ResendRequest): Promise<void> {
    return this.send(r);
  }
}
