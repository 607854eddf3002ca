import { Stack } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  LogGroupLogDestination,
  WebSocketApi,
  WebSocketStage,
  type WebSocketRoute,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration, WebSocketMockIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Config } from '#infra/config.ts';
import { PING_ACTION } from '#shared/stream/socket-stream.ts';

/** The stage: clients connect to `wss://<api host>/sockets` (CloudFront rewrites `/sockets/events/{id}` to it). */
export const STREAM_STAGE = 'sockets';

/** `{"action": "ping"}`: a keep-alive (10 idle minutes close a connection) that a mock integration takes, no function runs. */
export const PING_ROUTE = PING_ACTION;

export interface StreamSocketsProps {
  config: Config;
  accessLogs: ILogGroup;
}

/**
 * The event stream on AWS: an API Gateway WebSocket API (billed per message and connection minute,
 * nothing at rest). `$connect` authorizes and records the connection, `$disconnect` forgets it,
 * `$default` relays a client's user message, and `ping` (`{"action": "ping"}`) takes keep-alives
 * with a mock integration (a ping costs a message, not an invocation). The API is reached through CloudFront (infra/constructs/front.ts),
 * which maps `/sockets/events/{conversation_id}` onto the stage: a WebSocket API has no paths.
 * The routes come after the functions (`addRoutes`), which need the API's id for their grants.
 */
export class StreamSockets extends Construct {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;
  readonly routes = new Map<string, WebSocketRoute>();

  constructor(scope: Construct, id: string, props: StreamSocketsProps) {
    super(scope, id);
    this.api = new WebSocketApi(this, 'WebSocketApi', {
      description: 'Agent Conversation Service: live conversation events',
    });
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: STREAM_STAGE,
      autoDeploy: true,
      throttle: { rateLimit: props.config.apiThrottleRateLimit, burstLimit: props.config.apiThrottleBurstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(props.accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            connectionId: '$context.connectionId',
            eventType: '$context.eventType',
            routeKey: '$context.routeKey',
            status: '$context.status',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
  }

  /** The routes, once their functions exist. */
  addRoutes(fns: { connect: IFunction; disconnect: IFunction; message: IFunction }): void {
    this.routes.set(
      '$connect',
      this.api.addRoute('$connect', { integration: new WebSocketLambdaIntegration('Connect', fns.connect) }),
    );
    this.routes.set(
      '$disconnect',
      this.api.addRoute('$disconnect', { integration: new WebSocketLambdaIntegration('Disconnect', fns.disconnect) }),
    );
    // A message is answered only when it was refused (the function returns a body then).
    this.routes.set(
      '$default',
      this.api.addRoute('$default', {
        integration: new WebSocketLambdaIntegration('Message', fns.message),
        returnResponse: true,
      }),
    );
    this.routes.set(
      PING_ROUTE,
      this.api.addRoute(PING_ROUTE, { integration: new WebSocketMockIntegration('KeepAlive') }),
    );
  }

  /** Where functions post to connections (the @connections management endpoint of the stage). */
  get callbackUrl(): string {
    return this.stage.callbackUrl;
  }

  /** The API's host name (the CloudFront origin). */
  get host(): string {
    return `${this.api.apiId}.execute-api.${Stack.of(this).region}.${Stack.of(this).urlSuffix}`;
  }
}
