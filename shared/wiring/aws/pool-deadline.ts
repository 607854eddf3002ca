import { SignatureV4 } from '@smithy/signature-v4';
import { fromEnv, Sha256 } from '#shared/aws-sign.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/wiring/lazy.ts';

/**
 * A claim's binding deadline: Step Functions' StartExecution of the deadline state machine
 * (POOL_DEADLINE_STATE_MACHINE, infra/constructs/binding-deadline.ts: a Wait of 10 s, then the sweeper
 * invoked with the claim). One signed POST in Step Functions' JSON protocol, not `@aws-sdk/client-sfn`
 * (the functions that start sandboxes have a bundle budget), as shared/lambda-event.ts does for Lambda.
 * The execution's name is the sandbox and generation: a repeated call for the same claim starts nothing
 * new. The endpoint as the SDK resolves it: `AWS_ENDPOINT_URL_SFN`, `AWS_ENDPOINT_URL`, then the region's.
 */
export const poolDeadline: Builder<'poolDeadline'> = () => {
  const stateMachineArn = requireEnv('POOL_DEADLINE_STATE_MACHINE', "the warm pool's binding deadline");
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const endpoint = new URL(
    process.env.AWS_ENDPOINT_URL_SFN ?? process.env.AWS_ENDPOINT_URL ?? `https://states.${region}.amazonaws.com`,
  );
  const signer = new SignatureV4({ service: 'states', region, sha256: Sha256, credentials: async () => fromEnv() });
  const path = endpoint.pathname.endsWith('/') ? endpoint.pathname : `${endpoint.pathname}/`;
  return {
    async schedule(claim) {
      const body = JSON.stringify({
        stateMachineArn,
        name: `${claim.sandbox_id}-g${claim.generation}`,
        input: JSON.stringify({ bindingDeadline: claim }),
      });
      const signed = await signer.sign({
        method: 'POST',
        protocol: endpoint.protocol,
        hostname: endpoint.hostname,
        ...(endpoint.port ? { port: Number(endpoint.port) } : {}),
        path,
        query: {},
        headers: {
          host: endpoint.host,
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'AWSStepFunctions.StartExecution',
        },
        body,
      });
      // fetch sets Host itself (the same value, which is signed).
      const { host: _host, ...headers } = signed.headers;
      const res = await fetch(`${endpoint.origin}${path}`, { method: 'POST', headers, body });
      const text = await res.text().catch(() => '');
      if (!res.ok) throw new Error(`Starting the binding deadline failed: status ${res.status} ${text.slice(0, 200)}`);
    },
  };
};
