import { createHash, createHmac } from 'node:crypto';

/* What a signed POST to an AWS API needs without its SDK client (shared/lambda-event.ts, shared/wiring/aws/usage-bus.ts). */

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
