import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';

/**
 * Lambda's Invoke API with the `Event` invocation type: queued, retried by Lambda (then its
 * on-failure destination), answered 202 at once. Returns a function that sends `what` its payload.
 */
export function lambdaEvent<T>(functionArn: string, what: string): (payload: T) => Promise<void> {
  const lambda = new LambdaClient({});
  return async (payload) => {
    const res = await lambda.send(
      new InvokeCommand({
        FunctionName: functionArn,
        InvocationType: 'Event',
        Payload: new TextEncoder().encode(JSON.stringify(payload)),
      }),
    );
    if (res.StatusCode !== 202) throw new Error(`Invoking ${what} failed: status ${res.StatusCode}`);
  };
}
