import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LambdaService } from '#test/tier/lambda.ts';
import { ACCOUNT, names, ofType, REGION, STACK, type Template } from '#test/tier/template.ts';

/**
 * Lambda function URLs (AWS::Lambda::Url) and CloudFront's origin access control in front of them.
 *
 * - `signOac`: what CloudFront does for an origin with OAC (type lambda, SigV4, "always"): drops the
 *   viewer's Authorization and signs the request (host, x-amz-date, x-amz-content-sha256) as the
 *   distribution. CloudFront does not hash bodies: the payload hash signed is the viewer's own
 *   `x-amz-content-sha256`, or UNSIGNED-PAYLOAD without one.
 * - `FunctionUrlEmulator`: the URL's side. With auth type AWS_IAM a request must carry a valid SigV4
 *   signature for service `lambda` (recomputed here), a payload hash that is the body's SHA-256 (Lambda
 *   takes no unsigned payload), and the function's resource policy must grant the signer both
 *   `lambda:InvokeFunctionUrl` and `lambda:InvokeFunction` (since October 2025), each with a SourceArn
 *   matching the distribution; otherwise 403 as Lambda answers. Then the payload 2.0 event, and for
 *   RESPONSE_STREAM the handler's stream: the HTTP integration prelude (JSON, eight zero bytes) read
 *   off the front, then every byte passed on as it comes.
 * Not emulated: throttling, the 6 MB request limit's own 413 (Lambda answers it before the function),
 * the 200 MB streamed response limit, and CloudFront's origin read timeout between bytes.
 */

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/** The access key CloudFront's OAC signs with in the tier, per distribution (its secret is `secretOf`). */
export const oacAccessKey = (distributionId: string) => `TIER_OAC_${distributionId}`;
const secretOf = (accessKey: string) => `tier-oac-secret-${accessKey}`;
const SIGNED = ['host', 'x-amz-content-sha256', 'x-amz-date'];

function signature(
  req: { method: string; path: string; query: string; headers: Record<string, string> },
  amzDate: string,
  accessKey: string,
): string {
  const canonicalQuery = [...new URLSearchParams(req.query)]
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .sort()
    .join('&');
  const canonical = [
    req.method,
    req.path,
    canonicalQuery,
    `${SIGNED.map((h) => `${h}:${(req.headers[h] ?? '').trim()}`).join('\n')}\n`,
    SIGNED.join(';'),
    req.headers['x-amz-content-sha256'] ?? '',
  ].join('\n');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${REGION}/lambda/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  let key = hmac(`AWS4${secretOf(accessKey)}`, day);
  for (const part of [REGION, 'lambda', 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(toSign).digest('hex');
}

/** The headers CloudFront sends to an origin with OAC (lambda, SigV4, always): the viewer's Authorization replaced. */
export function signOac(
  method: string,
  target: URL,
  viewerHeaders: Record<string, string | string[]>,
  distributionId: string,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { ...viewerHeaders };
  delete headers.authorization;
  const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
  headers['x-amz-date'] = amzDate;
  const hash = viewerHeaders['x-amz-content-sha256'];
  headers['x-amz-content-sha256'] = typeof hash === 'string' && hash ? hash : 'UNSIGNED-PAYLOAD';
  const accessKey = oacAccessKey(distributionId);
  const flat = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v].flat().join(',')]));
  const sig = signature(
    { method, path: target.pathname, query: target.search.slice(1), headers: flat },
    amzDate,
    accessKey,
  );
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${accessKey}/${amzDate.slice(0, 8)}/${REGION}/lambda/aws4_request, SignedHeaders=${SIGNED.join(';')}, Signature=${sig}`;
  return headers;
}

interface FunctionUrl {
  id: string;
  domain: string;
  functionArn: string;
  authType: string;
  invokeMode: string;
}

/** A refusal as a function URL answers it. */
const refuse = (res: ServerResponse, status: number, message: string) =>
  void res
    .writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': 'AccessDeniedException' })
    .end(JSON.stringify({ Message: message }));

const PRELUDE_TYPE = 'application/vnd.awslambda.http-integration-response';

export class FunctionUrlEmulator {
  readonly urls: FunctionUrl[];
  /** Every request that reached a URL, and what became of it. */
  readonly records: { domain: string; status: number; refused?: string }[] = [];
  /** Distributions whose OAC may sign, by access key: their ARN is the SourceArn Lambda checks. */
  private readonly signers = new Map<string, string>();
  private server!: Server;
  url = '';

  constructor(
    resolved: Template,
    private readonly lambda: LambdaService,
  ) {
    this.urls = ofType(resolved, 'AWS::Lambda::Url').map(([id, r]) => ({
      id,
      domain: new URL(names(STACK, id, r).atts.FunctionUrl!).host,
      functionArn: r.Properties.TargetFunctionArn,
      authType: r.Properties.AuthType,
      invokeMode: r.Properties.InvokeMode ?? 'BUFFERED',
    }));
    for (const [id, r] of ofType(resolved, 'AWS::CloudFront::Distribution')) {
      const distributionId = names(STACK, id, r).atts.Id!;
      this.signers.set(oacAccessKey(distributionId), `arn:aws:cloudfront::${ACCOUNT}:distribution/${distributionId}`);
    }
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Who signed the request, or why it is refused (Lambda's own 403s). */
  private authenticate(req: IncomingMessage, url: URL, body: Buffer): { sourceArn: string } | { refused: string } {
    const auth =
      /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/lambda\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
        String(req.headers.authorization ?? ''),
      );
    if (!auth) return { refused: 'Missing Authentication Token' };
    const [, accessKey, , region, signedHeaders, sig] = auth as unknown as string[];
    const sourceArn = this.signers.get(accessKey!);
    if (!sourceArn || region !== REGION || signedHeaders !== SIGNED.join(';'))
      return { refused: 'The security token included in the request is invalid.' };
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, [v ?? ''].flat().join(',')]));
    const expected = signature(
      { method: req.method ?? 'GET', path: url.pathname, query: url.search.slice(1), headers },
      headers['x-amz-date'] ?? '',
      accessKey!,
    );
    if (!timingSafeEqual(Buffer.from(expected), Buffer.from(sig!)))
      return { refused: 'The request signature we calculated does not match the signature you provided.' };
    // Lambda computes the body's hash and compares: a PUT or POST needs the viewer's x-amz-content-sha256.
    if (headers['x-amz-content-sha256'] !== sha256(body))
      return { refused: 'The request signature we calculated does not match the signature you provided.' };
    return { sourceArn };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const domain = String(req.headers.host ?? '');
    const fu = this.urls.find((u) => u.domain === domain);
    const record = { domain, status: 0 } as (typeof this.records)[number];
    this.records.push(record);
    const deny = (status: number, why: string) => {
      record.status = status;
      record.refused = why;
      refuse(res, status, why);
    };
    if (!fu) return deny(404, `No function URL ${domain}`);
    const url = new URL(req.url ?? '/', `https://${domain}`);
    if (fu.authType === 'AWS_IAM') {
      const who = this.authenticate(req, url, body);
      if ('refused' in who) return deny(403, who.refused);
      // Both actions, each granted to CloudFront for this distribution (a function URL since October 2025).
      for (const action of ['lambda:InvokeFunctionUrl', 'lambda:InvokeFunction'])
        if (!this.lambda.mayInvoke(fu.functionArn, 'cloudfront.amazonaws.com', who.sourceArn, action))
          return deny(403, `Forbidden (no ${action} for cloudfront.amazonaws.com from ${who.sourceArn})`);
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = [v].flat().join(',');
    const type = headers['content-type'] ?? '';
    const text = /^(text\/|application\/(json|xml|x-www-form-urlencoded))/.test(type);
    const now = new Date();
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      headers,
      requestContext: {
        accountId: 'anonymous',
        apiId: domain.split('.')[0],
        domainName: domain,
        domainPrefix: domain.split('.')[0],
        http: {
          method: req.method,
          path: url.pathname,
          protocol: 'HTTP/1.1',
          sourceIp: '127.0.0.1',
          userAgent: headers['user-agent'] ?? '',
        },
        requestId: randomUUID(),
        routeKey: '$default',
        stage: '$default',
        time: now.toUTCString(),
        timeEpoch: now.getTime(),
      },
      ...(body.length ? { body: text ? body.toString('utf8') : body.toString('base64'), isBase64Encoded: !text } : {}),
    };
    if (fu.invokeMode !== 'RESPONSE_STREAM') throw new Error(`Function URL ${fu.id}: only RESPONSE_STREAM is emulated`);
    // The stream: the prelude (when the handler set the integration content type), then the body as it comes.
    let contentType = 'application/octet-stream';
    let head: Buffer | null = Buffer.alloc(0);
    const begin = (status: number, h: Record<string, string>) => {
      record.status = status;
      res.writeHead(status, h);
      res.flushHeaders();
    };
    const result = await this.lambda.invoke(fu.functionArn, event, {
      contentType: (t) => {
        contentType = t;
      },
      write: (chunk) => {
        if (head === null) return void res.write(chunk);
        if (contentType !== PRELUDE_TYPE) {
          begin(200, { 'content-type': contentType });
          head = null;
          return void res.write(chunk);
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf(Buffer.alloc(8));
        if (end < 0) return;
        const prelude = JSON.parse(head.subarray(0, end).toString('utf8')) as {
          statusCode?: number;
          headers?: Record<string, string>;
        };
        const rest = head.subarray(end + 8);
        head = null;
        begin(prelude.statusCode ?? 200, prelude.headers ?? {});
        if (rest.length) res.write(rest);
      },
    });
    if (!res.headersSent) {
      if (!result.ok) {
        record.status = 502;
        return void res
          .writeHead(502, { 'content-type': 'application/json' })
          .end(JSON.stringify({ Message: 'Internal Server Error' }));
      }
      begin(200, { 'content-type': contentType });
    }
    res.end();
  }
}
