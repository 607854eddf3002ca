import { awsPoster } from '#shared/aws-sign.ts';

/**
 * Lambda's Invoke API with the `Event` invocation type: queued, retried by Lambda (then its
 * on-failure destination), answered 202 at once. Returns a function that sends `what` its payload.
 *
 * One signed POST (`/2015-03-31/functions/{arn}/invocations`, `shared/aws-sign.ts`), not
 * `@aws-sdk/client-lambda`: that client bundles the schemas and errors of all of Lambda's operations
 * (about 85 KB minified with its REST protocol) to make this one call, which put the functions that
 * start sandboxes over the bundle budget (test/infra/bundles.test.ts).
 */
export function lambdaEvent<T>(functionArn: string, what: string): (payload: T) => Promise<void> {
  const post = awsPoster('lambda', 'LAMBDA');
  const path = `/2015-03-31/functions/${encodeURIComponent(functionArn)}/invocations`;
  return async (payload) => {
    const res = await post(
      path,
      { 'content-type': 'application/json', 'x-amz-invocation-type': 'Event' },
      JSON.stringify(payload),
    );
    if (res.status !== 202) throw new Error(`Invoking ${what} failed: status ${res.status}`);
  };
}
