import { Stack } from 'aws-cdk-lib';
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  Function as CloudFrontFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestPolicy,
  PriceClass,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { HttpOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { Construct } from 'constructs';
import { STREAM_STAGE } from '#infra/constructs/stream.ts';

/**
 * CloudFront's viewer-request function on `/sockets/*`: a WebSocket API has no paths (anything after
 * the stage is refused with 403), so `/sockets/<channel>/<id>` becomes the stage with `channel` and
 * `id` in the query, beside the client's own parameters (`resend_all`, `after_seq`, ...). Anything
 * else under `/sockets/` is answered 404 here. Plain ES5.1-style JavaScript: the cloudfront-js-2.0 runtime.
 */
export const SOCKET_PATH_FUNCTION = `function handler(event) {
  var request = event.request;
  var m = /^\\/sockets\\/([a-z][a-z-]{0,31})\\/([A-Za-z0-9_-]{1,128})$/.exec(request.uri);
  if (!m) return { statusCode: 404, statusDescription: 'Not Found' };
  request.uri = '/${STREAM_STAGE}';
  request.querystring.channel = { value: m[1] };
  request.querystring.id = { value: m[2] };
  return request;
}`;

export interface PublicFrontProps {
  httpApi: IHttpApi;
  /** The WebSocket API's host name. */
  socketHost: string;
}

/**
 * One host for the whole service: the OpenHands UI derives the stream's host from
 * `conversation_url`, and an API Gateway custom domain cannot map an HTTP API and a WebSocket API
 * together. CloudFront (billed per request, nothing at rest) sends `/sockets/*` to the WebSocket API
 * and everything else to the HTTP API, caching nothing and forwarding every header but Host (API
 * Gateway routes by its own host name), every cookie and the whole query.
 */
export class PublicFront extends Construct {
  readonly distribution: Distribution;

  constructor(scope: Construct, id: string, props: PublicFrontProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const forwardAll = {
      cachePolicy: CachePolicy.CACHING_DISABLED,
      originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
    };
    const socketPath = new CloudFrontFunction(this, 'SocketPath', {
      comment: 'Maps /sockets/<channel>/<id> onto the WebSocket API stage',
      runtime: FunctionRuntime.JS_2_0,
      code: FunctionCode.fromInline(SOCKET_PATH_FUNCTION),
    });
    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Agent Conversation Service: HTTP API and event stream on one host',
      httpVersion: HttpVersion.HTTP2,
      priceClass: PriceClass.PRICE_CLASS_100,
      defaultBehavior: {
        origin: new HttpOrigin(`${props.httpApi.apiId}.execute-api.${stack.region}.${stack.urlSuffix}`, {
          protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
        }),
        allowedMethods: AllowedMethods.ALLOW_ALL,
        ...forwardAll,
      },
      additionalBehaviors: {
        '/sockets/*': {
          origin: new HttpOrigin(props.socketHost, { protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY }),
          allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
          functionAssociations: [{ function: socketPath, eventType: FunctionEventType.VIEWER_REQUEST }],
          ...forwardAll,
        },
      },
    });
  }

  /** The service's public base URL. */
  get url(): string {
    return `https://${this.distribution.distributionDomainName}`;
  }
}
