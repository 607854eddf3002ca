import { SignatureV4 } from '@smithy/signature-v4';
import { fromEnv, Sha256 } from '#shared/aws-sign.ts';

/**
 * Lambda's Invoke API with the `Event` invocation type: queued, retried by Lambda (then its
 * on-failure destination), answered 202 at once. Returns a function that sends `what` its payload.
 *
 * One signed POST (`/2015-03-31/functions/{arn}/invocations`, SigV4 by the SDK's own signer), not
 * `@aws-sdk/client-lambda`: that client bundles the schemas and errors of all of Lambda's operations
 * (about 85 KB minified with its REST protocol) to make this one call, which put the functions that
 * start sandboxes over the bundle budget (test/infra/bundles.test.ts). The endpoint is resolved as
 * the SDK does (`AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL`, then the region's, aws partition).
 */
export function lambdaEvent<T>(functionArn: string, what: string): (payload: T) => Promise<void> {
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const endpoint = new URL(
    process.env.AWS_ENDPOINT_URL_LAMBDA ?? process.env.AWS_ENDPOINT_URL ?? `https://lambda.${region}.amazonaws.com`,
  );
  const signer = new SignatureV4({ service: 'lambda', region, sha256: Sha256, credentials: async () => fromEnv() });
  const path = `${endpoint.pathname.replace(/\/$/, '')}/2015-03-31/functions/${encodeURIComponent(functionArn)}/invocations`;
  return async (payload) => {
    const body = JSON.stringify(payload);
    const signed = await signer.sign({
      method: 'POST',
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      ...(endpoint.port ? { port: Number(endpoint.port) } : {}),
      path,
      query: {},
      headers: { host: endpoint.host, 'content-type': 'application/json', 'x-amz-invocation-type': 'Event' },
      body,
    });
    // fetch sets Host itself (the same value, which is signed).
    const { host: _host, ...headers } = signed.headers;
    const res = await fetch(`${endpoint.origin}${path}`, { method: 'POST', headers, body });
    await res.arrayBuffer().catch(() => undefined);
    if (res.status !== 202) throw new Error(`Invoking ${what} failed: status ${res.status}`);
  };
}
