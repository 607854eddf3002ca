import { createHash, createHmac, type BinaryLike } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { ResendRequest, ResendTrigger } from '#shared/stream/resend-trigger.ts';

type Data = string | ArrayBuffer | ArrayBufferView;
const bytes = (d: Data): BinaryLike => (typeof d === 'string' ? d : ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : new Uint8Array(d));

/** SHA-256 (keyed: HMAC) for the signer, from node:crypto. */
class Sha256 {
  private hash;
  constructor(private readonly secret?: Data) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: Data): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(this.secret));
  }
}

/**
 * Lambda's Invoke API with `X-Amz-Invocation-Type: Event` (queued, retried by Lambda, answered 202
 * at once), signed with the function's own credentials from its environment. A few lines over the
 * SigV4 signer every AWS SDK client is built on, where `@aws-sdk/client-lambda` is not a dependency.
 * The endpoint follows the SDK's variables (`AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL`).
 */
export class LambdaResendTrigger implements ResendTrigger {
  constructor(private readonly functionArn: string) {}

  async request(r: ResendRequest): Promise<void> {
    const region = process.env.AWS_REGION ?? this.functionArn.split(':')[3]!;
    const endpoint = new URL(process.env.AWS_ENDPOINT_URL_LAMBDA ?? process.env.AWS_ENDPOINT_URL ?? `https://lambda.${region}.amazonaws.com`);
    const accessKeyId = process.env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
    if (!accessKeyId || !secretAccessKey) throw new Error('No AWS credentials in the environment (Lambda sets them)');
    const signer = new SignatureV4({
      service: 'lambda',
      region,
      sha256: Sha256,
      credentials: { accessKeyId, secretAccessKey, ...(process.env.AWS_SESSION_TOKEN ? { sessionToken: process.env.AWS_SESSION_TOKEN } : {}) },
    });
    const body = JSON.stringify(r);
    const path = `/2015-03-31/functions/${encodeURIComponent(this.functionArn)}/invocations`;
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
    const res = await fetch(new URL(path, endpoint), { method: 'POST', headers: signed.headers, body });
    if (res.status !== 202) throw new Error(`Invoking the resend function failed: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  }
}
