import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

/*
 * One signed POST to an AWS API without its SDK client (Lambda's Invoke, EventBridge's PutEvents, Step
 * Functions' StartExecution): each client bundles the schemas and errors of all its service's operations
 * to make the one call, which put the functions that call them over the bundle budget
 * (test/infra/bundles.test.ts). Signed by the SDK's own signer, SigV4.
 */

/** SigV4's hash: SHA-256, or HMAC-SHA-256 under `secret` (the contract of the SDK's `@smithy/hash-node`). */
export class Sha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret
      ? createHmac('sha256', typeof secret === 'string' ? secret : Buffer.from(secret as ArrayBuffer))
      : createHash('sha256');
  }
  update(data: string | ArrayBufferView): void {
    this.hash.update(data as string);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

/** Lambda's credentials and region, from the environment Lambda gives a function. */
export function fromEnv() {
  const accessKeyId = process.env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey)
    throw new Error('No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them)');
  return {
    accessKeyId,
    secretAccessKey,
    ...(process.env.AWS_SESSION_TOKEN ? { sessionToken: process.env.AWS_SESSION_TOKEN } : {}),
  };
}

/** What an AWS API answered a signed POST: its status and body (read whole, so the connection is free). */
export interface AwsAnswer {
  status: number;
  ok: boolean;
  text: string;
}

/**
 * A poster to one AWS service: `post(path, headers, body)` signs and sends one POST to `path` under the
 * service's endpoint, resolved as the SDK does (`AWS_ENDPOINT_URL_<endpointEnv>`, `AWS_ENDPOINT_URL`, then
 * the region's `https://<service>.<region>.amazonaws.com`, aws partition). `service` is the signing name
 * and the endpoint's host prefix (they are the same for lambda, events and states).
 */
export function awsPoster(
  service: string,
  endpointEnv: string,
): (path: string, headers: Record<string, string>, body: string) => Promise<AwsAnswer> {
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const endpoint = new URL(
    process.env[`AWS_ENDPOINT_URL_${endpointEnv}`] ??
      process.env.AWS_ENDPOINT_URL ??
      `https://${service}.${region}.amazonaws.com`,
  );
  const signer = new SignatureV4({ service, region, sha256: Sha256, credentials: async () => fromEnv() });
  const base = endpoint.pathname.replace(/\/$/, '');
  return async (path, headers, body) => {
    const signed = await signer.sign({
      method: 'POST',
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      ...(endpoint.port ? { port: Number(endpoint.port) } : {}),
      path: `${base}${path}`,
      query: {},
      headers: { host: endpoint.host, ...headers },
      body,
    });
    // fetch sets Host itself (the same value, which is signed).
    const { host: _host, ...sent } = signed.headers;
    const res = await fetch(`${endpoint.origin}${base}${path}`, { method: 'POST', headers: sent, body });
    const text = await res.text().catch(() => '');
    return { status: res.status, ok: res.ok, text };
  };
}

/**
 * An operation of an AWS JSON-protocol API (EventBridge: `AWSEvents`, JSON 1.1; Step Functions:
 * `AWSStepFunctions`, JSON 1.0): `target` is `<prefix>.<Operation>`; the body goes as JSON to `/`.
 */
export function awsJsonPost(
  service: string,
  endpointEnv: string,
  target: string,
  version: '1.0' | '1.1',
): (body: unknown) => Promise<AwsAnswer> {
  const post = awsPoster(service, endpointEnv);
  const headers = { 'content-type': `application/x-amz-json-${version}`, 'x-amz-target': target };
  return (body) => post('/', headers, JSON.stringify(body));
}
