import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { ResendRequest, ResendTrigger } from '#shared/stream/resend-trigger.ts';

/**
 * Lambda's Invoke API with the `Event` invocation type: queued, retried by Lambda, answered 202 at
 * once, so `$connect` returns before the resend sends anything (it cannot send before it returns).
 */
export class LambdaResendTrigger implements ResendTrigger {
  private readonly lambda = new LambdaClient({});

  constructor(private readonly functionArn: string) {}

  async request(r: ResendRequest): Promise<void> {
    const res = await this.lambda.send(new InvokeCommand({ FunctionName: this.functionArn, InvocationType: 'Event', Payload: new TextEncoder().encode(JSON.stringify(r)) }));
    if (res.StatusCode !== 202) throw new Error(`Invoking the resend function failed: status ${res.StatusCode}`);
  }
}
