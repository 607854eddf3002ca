import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';

/**
 * s3rver on loopback (it verifies no signatures) behind a proxy that does what S3 would for the
 * requests a sandbox makes with presigned URLs: it checks each one's signature with the test
 * credentials, its expiry, and that what it signs is what the control plane meant to allow (one
 * sandbox's prefix, the method, the size bound), and refuses (403) otherwise. Calls signed in the
 * Authorization header (the control plane's own HeadObject, List, Delete) pass through.
 */
// s3rver's own key pair: it refuses other access key ids (it checks no signature).
export const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
export const REGION = 'us-east-1';
export const BUCKET = 'workspaces-test';

export interface Intent {
  /** Only this sandbox's prefix may be signed for. */
  sandboxId: string;
  maxBytes: number;
  expiresSeconds: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = netServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
/** The SigV4 signing key of a credential scope (`<date>/<region>/s3/aws4_request`). */
function signingKey(scope: string): Buffer {
  const [date = '', region = ''] = scope.split('/');
  return hmac(hmac(hmac(hmac(`AWS4${CREDENTIALS.secretAccessKey}`, date), region), 's3'), 'aws4_request');
}

export class CheckedS3 {
  /** Every refusal, with its reason (tests assert on them). */
  readonly refusals: string[] = [];
  /** Presigned requests that passed the checks and reached s3rver. */
  readonly accepted: { method: string; key: string }[] = [];
  intent: Intent = { sandboxId: '', maxBytes: 0, expiresSeconds: 0 };
  private s3rver: { run(): Promise<unknown>; close(): Promise<void> } | undefined;
  private proxy: Server | undefined;
  private dir = '';
  private upstreamPort = 0;
  endpoint = '';

  async start(): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), 's3rver-'));
    this.upstreamPort = await freePort();
    this.s3rver = new S3rver({
      port: this.upstreamPort,
      address: '127.0.0.1',
      silent: true,
      directory: this.dir,
      configureBuckets: [{ name: BUCKET }],
    });
    await this.s3rver!.run();
    this.proxy = createServer((req, res) => void this.handle(req, res));
    const port = await freePort();
    await new Promise<void>((resolve) => this.proxy!.listen(port, '127.0.0.1', resolve));
    this.endpoint = `http://127.0.0.1:${port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.proxy ? this.proxy.close(() => resolve()) : resolve()));
    await this.s3rver?.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  client(): S3Client {
    return new S3Client({ region: REGION, endpoint: this.endpoint, forcePathStyle: true, credentials: CREDENTIALS });
  }

  /** The keys stored under `prefix`, sorted (what the tests assert deletion with). */
  async keys(prefix: string): Promise<string[]> {
    const client = this.client();
    const out = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    client.destroy();
    return (out.Contents ?? []).map((o) => o.Key!).sort();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', this.endpoint);
    let refusal: string | null = null;
    try {
      if (req.headers.authorization) refusal = null;
      else if (req.method === 'POST' && url.pathname === `/${BUCKET}`) refusal = await this.checkPost(req, body);
      else if (url.searchParams.has('X-Amz-Signature')) refusal = this.checkPresigned(req.method ?? '', url);
      else refusal = 'unsigned request';
    } catch (err) {
      refusal = `malformed: ${(err as Error).message}`;
    }
    if (refusal) {
      this.refusals.push(refusal);
      res
        .writeHead(403, { 'content-type': 'application/xml' })
        .end(`<Error><Code>AccessDenied</Code><Message>${refusal}</Message></Error>`);
      return;
    }
    const up = httpRequest(
      { host: '127.0.0.1', port: this.upstreamPort, method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on('error', () => res.writeHead(502).end());
    up.end(body);
  }

  /** A browser-form POST: the policy's signature, expiry, key and size bound, and the file's size. */
  private async checkPost(req: IncomingMessage, body: Buffer): Promise<string | null> {
    const form = await new Response(body, {
      headers: { 'content-type': String(req.headers['content-type']) },
    }).formData();
    const field = (name: string) => {
      const v = form.get(name);
      return typeof v === 'string' ? v : '';
    };
    const policyB64 = field('Policy');
    const credential = field('X-Amz-Credential');
    const scope = credential.split('/').slice(1).join('/');
    if (!policyB64 || hmac(signingKey(scope), policyB64).toString('hex') !== field('X-Amz-Signature'))
      return 'POST policy signature does not match';
    if (!credential.startsWith(`${CREDENTIALS.accessKeyId}/`)) return 'POST signed by unknown credentials';
    const policy = JSON.parse(Buffer.from(policyB64, 'base64').toString()) as {
      expiration: string;
      conditions: unknown[];
    };
    const expires = Date.parse(policy.expiration);
    if (!(expires > Date.now())) return 'POST policy expired';
    if (expires > Date.now() + (this.intent.expiresSeconds + 5) * 1000) return 'POST policy valid longer than intended';
    const key = field('key');
    const keyCond = policy.conditions.find((c) => Array.isArray(c) && c[0] === 'eq' && c[1] === '$key') as
      | string[]
      | undefined;
    if (!keyCond || keyCond[2] !== key) return 'POST key is not the signed key';
    if (!key.startsWith(`sandboxes/${this.intent.sandboxId}/`)) return 'POST key outside the sandbox prefix';
    const range = policy.conditions.find((c) => Array.isArray(c) && c[0] === 'content-length-range') as
      | [string, number, number]
      | undefined;
    if (range?.[1] !== 1 || range[2] !== this.intent.maxBytes) return 'POST size bound is not the intended one';
    const file = form.get('file');
    if (!(file instanceof Blob)) return 'POST has no file';
    if (file.size < range[1] || file.size > range[2]) return 'POST file outside content-length-range';
    this.accepted.push({ method: 'POST', key });
    return null;
  }

  /** A presigned GET: recomputes its SigV4 query signature, then checks method, key, and expiry. */
  private checkPresigned(method: string, url: URL): string | null {
    const q = url.searchParams;
    const amzDate = q.get('X-Amz-Date') ?? '';
    const expiresIn = Number(q.get('X-Amz-Expires'));
    const signed = new Date(
      `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
    );
    // SigV4 query signing, recomputed: the canonical request over the URL as sent, host the only signed header.
    const enc = (v: string) =>
      encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    const canonicalQuery = [...q]
      .filter(([k]) => k !== 'X-Amz-Signature')
      .map(([k, v]): [string, string] => [enc(k), enc(v)])
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    const canonical = [method, url.pathname, canonicalQuery, `host:${url.host}\n`, 'host', 'UNSIGNED-PAYLOAD'].join(
      '\n',
    );
    const scope = (q.get('X-Amz-Credential') ?? '').split('/').slice(1).join('/');
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join(
      '\n',
    );
    const expected = hmac(signingKey(scope), toSign).toString('hex');
    if (q.get('X-Amz-SignedHeaders') !== 'host' || expected !== q.get('X-Amz-Signature'))
      return `${method} signature does not match`;
    if (method !== 'GET') return `${method} is not an allowed presigned method`;
    if (!(signed.getTime() + expiresIn * 1000 > Date.now())) return 'GET URL expired';
    if (expiresIn > this.intent.expiresSeconds) return 'GET URL valid longer than intended';
    const key = decodeURIComponent(url.pathname.slice(`/${BUCKET}/`.length));
    if (!key.startsWith(`sandboxes/${this.intent.sandboxId}/`)) return 'GET key outside the sandbox prefix';
    this.accepted.push({ method, key });
    return null;
  }
}
