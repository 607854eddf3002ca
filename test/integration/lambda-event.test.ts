import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, createHmac } from 'node:crypto';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { awsJsonPost } from '#shared/aws-sign.ts';
import { lambdaEvent } from '#shared/lambda-event.ts';

/*
 * The signed Invoke POST (shared/lambda-event.ts) against what the SDK's own Lambda client sends for
 * the same call at the same instant: the same path, invocation type, body and SigV4 signature.
 */
const seen: { url: string; headers: IncomingMessage['headers']; body: string }[] = [];
let status = 202;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({ url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    res.writeHead(status, { 'content-type': 'application/json' }).end(status === 202 ? '' : '{"message":"no"}');
  });
});
let endpoint: string;
const env = {
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  AWS_SESSION_TOKEN: 'session-token',
};

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const [k, v] of Object.entries({ ...env, AWS_ENDPOINT_URL_LAMBDA: endpoint })) vi.stubEnv(k, v);
});
afterAll(async () => {
  vi.unstubAllEnvs();
  vi.useRealTimers();
  await new Promise((r) => server.close(r));
});

/** AWS SigV4 (docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html) for a received request. */
function sigv4(req: (typeof seen)[0], signed: string[], service = 'lambda'): string {
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const hmac = (k: Buffer | string, s: string) => createHmac('sha256', k).update(s).digest();
  const date = String(req.headers['x-amz-date']);
  const scope = `${date.slice(0, 8)}/eu-west-1/${service}/aws4_request`;
  // Non-S3 services: each path segment URI-encoded again.
  const path = req.url
    .split('/')
    .map((p) => encodeURIComponent(p))
    .join('/');
  const canonical = [
    'POST',
    path,
    '',
    ...signed.map((h) => `${h}:${String(req.headers[h]).trim()}`),
    '',
    signed.join(';'),
    sha(req.body),
  ].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', date, scope, sha(canonical)].join('\n');
  let key = hmac(`AWS4${env.AWS_SECRET_ACCESS_KEY}`, date.slice(0, 8));
  for (const part of ['eu-west-1', service, 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(toSign).digest('hex');
}

describe('lambdaEvent', () => {
  const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:pool-refill';
  const payload = { specId: 'default' };

  it('sends what the SDK client sends for an Event invoke, signed the same', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-26T03:00:00Z'));
    seen.length = 0;
    await lambdaEvent<typeof payload>(arn, 'the refill')(payload);
    const sdk = new LambdaClient({
      region: env.AWS_REGION,
      endpoint,
      credentials: {
        accessKeyId: env.AWS_ACCESS_KEY_ID,
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
        sessionToken: env.AWS_SESSION_TOKEN,
      },
    });
    await sdk.send(
      new InvokeCommand({
        FunctionName: arn,
        InvocationType: 'Event',
        Payload: new TextEncoder().encode(JSON.stringify(payload)),
      }),
    );
    vi.useRealTimers();
    const [ours, theirs] = seen as [(typeof seen)[0], (typeof seen)[0]];
    expect(ours.url).toBe(theirs.url);
    expect(ours.url).toBe(`/2015-03-31/functions/${encodeURIComponent(arn)}/invocations`);
    expect(ours.body).toBe(theirs.body);
    expect(ours.headers['x-amz-invocation-type']).toBe('Event');
    expect(ours.headers['x-amz-security-token']).toBe(env.AWS_SESSION_TOKEN);
    expect(ours.headers['x-amz-date']).toBe(theirs.headers['x-amz-date']);
    // The same credential scope, and a signature over the headers both sign in common.
    const parts = (h: IncomingMessage['headers']) =>
      Object.fromEntries(
        String(h.authorization)
          .replace(/^AWS4-HMAC-SHA256 /, '')
          .split(', ')
          .map((p) => p.split('=') as [string, string]),
      );
    const a = parts(ours.headers);
    const b = parts(theirs.headers);
    expect(a.Credential).toBe(b.Credential);
    expect(a.Credential).toMatch(/^AKIDEXAMPLE\/20261126\/eu-west-1\/lambda\/aws4_request$/);
    // The SDK signs its own extra headers (user agent, content-length...): ours signs a subset, each of which it sends.
    for (const h of a.SignedHeaders!.split(';')) expect(ours.headers[h], h).toBeDefined();
    expect(a.SignedHeaders!.split(';')).toEqual(
      expect.arrayContaining(['host', 'x-amz-date', 'x-amz-invocation-type']),
    );
    // The signature checks out over the request as it arrived (path, Host with its port, body), by
    // SigV4 computed here from its definition (not by the signer that made it).
    expect(a.Signature).toBe(sigv4(ours, a.SignedHeaders!.split(';')));
    // The reference computation agrees with the SDK client's own signature.
    expect(b.Signature).toBe(sigv4(theirs, b.SignedHeaders!.split(';')));
  });

  it('fails with the status when Lambda does not queue the event', async () => {
    status = 403;
    try {
      await expect(lambdaEvent(arn, 'the refill')(payload)).rejects.toThrow('Invoking the refill failed: status 403');
    } finally {
      status = 202;
    }
  });

  it('fails naming the variables when Lambda gave no credentials', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', '');
    try {
      await expect(lambdaEvent(arn, 'the refill')(payload)).rejects.toThrow(/AWS_ACCESS_KEY_ID/);
    } finally {
      vi.stubEnv('AWS_ACCESS_KEY_ID', env.AWS_ACCESS_KEY_ID);
    }
  });
});

describe('awsJsonPost', () => {
  it("posts one JSON-protocol operation to the service's endpoint (its path kept), signed for that service", async () => {
    // An endpoint with a path, as a proxy or a test fake may have: the operation goes to that path
    // (unstubbed with the others after all).
    vi.stubEnv('AWS_ENDPOINT_URL_SFN', `${endpoint}/states-proxy`);
    try {
      seen.length = 0;
      status = 200;
      const body = { stateMachineArn: 'arn:aws:states:eu-west-1:123456789012:stateMachine:m', name: 'x-g1' };
      const res = await awsJsonPost('states', 'SFN', 'AWSStepFunctions.StartExecution', '1.0')(body);
      expect(res).toMatchObject({ status: 200, ok: true });
      const [req] = seen as [(typeof seen)[0]];
      expect(req.url).toBe('/states-proxy/');
      expect(req.headers['content-type']).toBe('application/x-amz-json-1.0');
      expect(req.headers['x-amz-target']).toBe('AWSStepFunctions.StartExecution');
      expect(JSON.parse(req.body)).toEqual(body);
      const auth = String(req.headers.authorization);
      const signed = /SignedHeaders=([^,]+)/.exec(auth)![1]!.split(';');
      expect(signed).toEqual(expect.arrayContaining(['content-type', 'host', 'x-amz-target']));
      expect(auth).toMatch(/Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/states\/aws4_request/);
      expect(/Signature=([0-9a-f]{64})/.exec(auth)![1]).toBe(sigv4(req, signed, 'states'));
    } finally {
      status = 202;
    }
  });
});
