import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { runInNewContext } from 'node:vm';
import { signOac } from '#test/tier/function-url.ts';
import { names, ofType, STACK, type Template } from '#test/tier/template.ts';

/**
 * The CloudFront distribution in front of both APIs, as the template defines it: cache behaviours
 * chosen by path pattern (the first match, else the default), each one's viewer-request function
 * run from the template's own code (cloudfront-js in a fresh VM context: a function that answers
 * ends the request there), then the request proxied to the behaviour's origin, WebSocket upgrades
 * included. It checks the policies the service relies on (caching disabled; every header but Host,
 * every cookie, the whole query forwarded: the managed policies' ids) and sends the origin's own
 * host, as CloudFront does when Host is not forwarded. `origins` maps each origin's domain to where
 * the tier serves it. Not emulated: caching, TLS, geo, signed URLs, other event types.
 */

const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const ALL_VIEWER_EXCEPT_HOST_HEADER = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';

interface Behaviour {
  pattern: string;
  origin: string;
  methods: string[];
  viewerRequest?: (event: unknown) => any;
}

const patternRe = (p: string) =>
  new RegExp(
    `^${p
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );

export class CloudFrontEmulator {
  readonly domainName: string;
  private readonly behaviours: Behaviour[] = [];
  private readonly fallback: Behaviour;
  private readonly originDomains = new Map<string, string>();
  /** Origins with origin access control (lambda, SigV4, always): each request to them is signed (test/tier/function-url.ts). */
  private readonly signedOrigins = new Set<string>();
  private readonly distributionId: string;
  private server!: Server;
  /** Upgraded connections, which the HTTP server no longer tracks. */
  private readonly tunnels = new Set<Duplex>();
  readonly faults: Error[] = [];
  url = '';

  constructor(
    resolved: Template,
    /** Origin domain -> the tier's URL for it (`http://127.0.0.1:port`). */
    private readonly origins: Map<string, string>,
  ) {
    const dists = ofType(resolved, 'AWS::CloudFront::Distribution');
    if (dists.length !== 1) throw new Error(`Expected one CloudFront distribution; the template has ${dists.length}`);
    const [id, dist] = dists[0]!;
    this.domainName = names(STACK, id, dist).atts.DomainName!;
    this.distributionId = names(STACK, id, dist).atts.Id!;
    const config = dist.Properties.DistributionConfig;
    const oacs = new Map(
      ofType(resolved, 'AWS::CloudFront::OriginAccessControl').map(([oid, r]) => [
        names(STACK, oid, r).atts.Id!,
        r.Properties.OriginAccessControlConfig,
      ]),
    );
    for (const o of config.Origins) {
      if (o.OriginPath) throw new Error(`Origin ${o.Id}: an origin path is not emulated`);
      this.originDomains.set(o.Id, o.DomainName);
      if (o.OriginAccessControlId) {
        const oac = oacs.get(o.OriginAccessControlId);
        if (
          oac?.OriginAccessControlOriginType !== 'lambda' ||
          oac.SigningBehavior !== 'always' ||
          oac.SigningProtocol !== 'sigv4'
        )
          throw new Error(`Origin ${o.Id}: only origin access control for lambda, sigv4, always is emulated`);
        this.signedOrigins.add(o.Id);
      }
    }
    const functions = new Map(
      ofType(resolved, 'AWS::CloudFront::Function').map(([fid, r]) => {
        if (r.Properties.FunctionConfig.Runtime !== 'cloudfront-js-2.0')
          throw new Error(`CloudFront function ${fid}: runtime ${r.Properties.FunctionConfig.Runtime} is not emulated`);
        const handler = runInNewContext(`${r.Properties.FunctionCode}\n;handler`, {}) as (event: unknown) => unknown;
        return [names(STACK, fid, r).atts.FunctionARN!, handler];
      }),
    );
    const behaviour = (b: any, pattern: string): Behaviour => {
      if (b.CachePolicyId !== CACHING_DISABLED)
        throw new Error(
          `Behaviour ${pattern}: API responses must not be cached (CachingDisabled), got ${b.CachePolicyId}`,
        );
      if (b.OriginRequestPolicyId !== ALL_VIEWER_EXCEPT_HOST_HEADER)
        throw new Error(
          `Behaviour ${pattern}: the APIs need every header but Host, the cookies and the query (AllViewerExceptHostHeader)`,
        );
      const assoc = (b.FunctionAssociations ?? []).filter((f: any) => f.EventType === 'viewer-request');
      if ((b.FunctionAssociations ?? []).length !== assoc.length)
        throw new Error(`Behaviour ${pattern}: only viewer-request functions are emulated`);
      const fn = assoc[0] ? functions.get(assoc[0].FunctionARN) : undefined;
      if (assoc[0] && !fn) throw new Error(`Behaviour ${pattern}: unknown function ${assoc[0].FunctionARN}`);
      return {
        pattern,
        origin: b.TargetOriginId,
        methods: b.AllowedMethods ?? ['GET', 'HEAD'],
        ...(fn ? { viewerRequest: fn } : {}),
      };
    };
    for (const b of config.CacheBehaviors ?? []) this.behaviours.push(behaviour(b, b.PathPattern));
    this.fallback = behaviour(config.DefaultCacheBehavior, '*');
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const routed = this.route(req);
      if ('status' in routed)
        return void res.writeHead(routed.status, { 'content-type': 'text/plain' }).end(routed.text);
      const out = httpRequest(routed.target, { method: req.method, headers: routed.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      out.on('error', (err) => {
        this.faults.push(err);
        if (!res.headersSent) res.writeHead(502).end();
      });
      req.pipe(out);
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const routed = this.route(req);
      if ('status' in routed)
        return void socket.end(
          `HTTP/1.1 ${routed.status} ${routed.text}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`,
        );
      const target = new URL(routed.target);
      this.tunnels.add(socket);
      socket.once('close', () => this.tunnels.delete(socket));
      const upstream = connect(Number(target.port), target.hostname, () => {
        const lines = [
          `GET ${target.pathname}${target.search} HTTP/1.1`,
          ...Object.entries(routed.headers).flatMap(([k, v]) => [v].flat().map((x) => `${k}: ${x}`)),
        ];
        upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length) upstream.write(head);
        socket.pipe(upstream).pipe(socket);
      });
      const end = () => {
        socket.destroy();
        upstream.destroy();
      };
      upstream.on('error', end);
      socket.on('error', end);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.tunnels) socket.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The behaviour's function and origin for one viewer request: where to send it, or CloudFront's (or the function's) own answer. */
  route(
    req: IncomingMessage,
  ): { target: string; headers: Record<string, string | string[]> } | { status: number; text: string } {
    const url = new URL(req.url ?? '/', 'http://x');
    const b = this.behaviours.find((x) => patternRe(x.pattern).test(url.pathname)) ?? this.fallback;
    if (!b.methods.includes(req.method ?? 'GET')) return { status: 403, text: 'Forbidden' };
    let uri = url.pathname;
    let search = url.search;
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && k !== 'host') headers[k] = v;
    // CloudFront's own header, replacing any a viewer sent: the viewer's address and source port (IPv6 unbracketed),
    // forwarded by the behaviours' AllViewerExceptHostHeader policy (shared/http/client-address.ts).
    const viewerIp = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    headers['cloudfront-viewer-address'] = `${viewerIp}:${req.socket.remotePort}`;
    if (b.viewerRequest) {
      const querystring: Record<string, { value: string }> = {};
      for (const [k, v] of url.searchParams) querystring[k] = { value: v };
      const event = {
        version: '1.0',
        context: { eventType: 'viewer-request', distributionDomainName: this.domainName },
        viewer: { ip: viewerIp },
        request: {
          method: req.method,
          uri,
          querystring,
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, { value: String(v) }])),
          cookies: {},
        },
      };
      const out = b.viewerRequest(event);
      if (out && typeof out.statusCode === 'number')
        return { status: out.statusCode, text: out.statusDescription ?? '' };
      uri = out.uri;
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(out.querystring as Record<string, { value: string }>))
        params.append(k, v.value);
      search = params.size ? `?${params}` : '';
    }
    const domain = this.originDomains.get(b.origin)!;
    const base = this.origins.get(domain);
    if (!base) throw new Error(`No tier server for origin ${domain}`);
    // CloudFront sends the origin's own host when the viewer's Host is not forwarded.
    headers.host = domain;
    // Origin access control: the viewer's Authorization replaced by CloudFront's own SigV4 signature.
    const signed = this.signedOrigins.has(b.origin)
      ? signOac(req.method ?? 'GET', new URL(`https://${domain}${uri}${search}`), headers, this.distributionId)
      : headers;
    return { target: `${base}${uri}${search}`, headers: signed };
  }
}
