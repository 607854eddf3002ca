import { Stack } from 'aws-cdk-lib';
import {
  CfnIntegration,
  CfnIntegrationResponse,
  CfnRoute,
  CfnRouteResponse,
  WebSocketApi,
  WebSocketStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';

export interface BridgeSocketProps {
  /** Per-stage message and connection throttles, like the HTTP API's. */
  throttle: { rateLimit: number; burstLimit: number };
}

/** The stage name: part of the socket's URL and of the management endpoint's. */
export const BRIDGE_SOCKET_STAGE = 'bridge';
/** What the `$default` route answers to any message from a program (its ping). */
export const BRIDGE_SOCKET_PONG = '{"pong":true}';

/**
 * The bridge socket: an API Gateway WebSocket API that sandbox programs connect OUT to with their own
 * session key, so queued commands are pushed to them (PostToConnection) instead of a Lambda waiting
 * in a long-poll (docs/architecture.md, "Bridge socket"). Its own API, not a route of the client
 * event stream's: the audiences (sandbox programs, browsers) authenticate differently and nothing is
 * billed while no one is connected either way.
 *
 * Routes: `$connect` (a Lambda that checks the key and records the connection on the sandbox) and
 * `$default`, a MOCK integration that answers every message with a pong: the program's pings keep
 * the connection within the 10-minute idle limit, and nothing a program sends reaches a function or
 * another connection. No `$disconnect`: a gone connection answers the next push with 410, and the
 * pusher forgets it.
 */
export class BridgeSocket extends Construct {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;

  constructor(scope: Construct, id: string, props: BridgeSocketProps) {
    super(scope, id);
    this.api = new WebSocketApi(this, 'Api', {
      description: 'Agent Conversation Service: the command socket of sandbox programs',
    });
    const apiId = this.api.apiId;
    const pong = new CfnIntegration(this, 'PongIntegration', {
      apiId,
      integrationType: 'MOCK',
      requestTemplates: { $default: '{"statusCode": 200}' },
      templateSelectionExpression: '\\$default',
    });
    new CfnIntegrationResponse(this, 'PongIntegrationResponse', {
      apiId,
      integrationId: pong.ref,
      integrationResponseKey: '$default',
      responseTemplates: { $default: BRIDGE_SOCKET_PONG },
      templateSelectionExpression: '\\$default',
    });
    const route = new CfnRoute(this, 'DefaultRoute', {
      apiId,
      routeKey: '$default',
      authorizationType: 'NONE',
      target: `integrations/${pong.ref}`,
      routeResponseSelectionExpression: '$default',
    });
    new CfnRouteResponse(this, 'DefaultRouteResponse', { apiId, routeId: route.ref, routeResponseKey: '$default' });
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: BRIDGE_SOCKET_STAGE,
      autoDeploy: true,
      throttle: props.throttle,
    });
  }

  /** The `$connect` route's function (it exists only after the grants that name this API). */
  connectWith(fn: IFunction): void {
    this.api.addRoute('$connect', { integration: new WebSocketLambdaIntegration('Connect', fn) });
  }

  /** `wss://...`: what sandbox programs connect to. */
  get url(): string {
    return this.stage.url;
  }

  /** `https://...`: the @connections management endpoint PostToConnection calls. */
  get managementEndpoint(): string {
    return this.stage.callbackUrl;
  }

  /** What `execute-api:ManageConnections` is granted on: posting to this stage's connections, nothing else. */
  get connectionsArn(): string {
    return Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.api.apiId,
      resourceName: `${BRIDGE_SOCKET_STAGE}/POST/@connections/*`,
    });
  }
}
