import { Duration, type CfnResource } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  type IHttpRoute,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaAuthorizer, HttpLambdaResponseType } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Config } from '#infra/config.ts';
import {
  CORS_ALLOW_HEADERS,
  CORS_ALLOW_METHODS,
  CORS_EXPOSE_HEADERS,
  CORS_MAX_AGE_SECONDS,
} from '#shared/http/cors.ts';
import type { RouteDef } from '#shared/http/route.ts';

export interface ApiProps {
  config: Config;
  authorizer: IFunction;
  fallback: IFunction;
  accessLogs: ILogGroup;
}

/**
 * The HTTP API: one route per route-table entry (`addRoute`, each made beside its function, in that
 * function's nested stack), `user` routes behind the Lambda REQUEST authorizer, and `$default` for
 * everything else. The authorizer has no identity source and no
 * cache (see docs/architecture.md, "Authorizer"): a key may come in either of two headers or not at
 * all (a browser's session cookie), and an identity source would reject a request lacking the one
 * it names before our authorizer ran.
 */
export class Api extends Construct {
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  /** API Gateway routes by route id. */
  readonly routes = new Map<string, HttpRoute>();
  private readonly authorizer: HttpLambdaAuthorizer;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const origins = props.config.corsAllowedOrigins;
    this.httpApi = new HttpApi(this, 'HttpApi', {
      description: 'Agent Conversation Service',
      createDefaultStage: false,
      defaultIntegration: new HttpLambdaIntegration('Fallback', props.fallback),
      ...(origins.length
        ? {
            // The same answers as the local gateway (shared/http/cors.ts); API Gateway answers
            // preflights on every route itself. Cookies only when every origin is named.
            corsPreflight: {
              allowOrigins: origins,
              allowHeaders: CORS_ALLOW_HEADERS,
              allowMethods: CORS_ALLOW_METHODS.map((m) => CorsHttpMethod[m as keyof typeof CorsHttpMethod]),
              exposeHeaders: CORS_EXPOSE_HEADERS,
              allowCredentials: !origins.includes('*'),
              maxAge: Duration.seconds(CORS_MAX_AGE_SECONDS),
            },
          }
        : {}),
    });
    this.stage = new HttpStage(this, 'Stage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.config.apiThrottleRateLimit, burstLimit: props.config.apiThrottleBurstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(props.accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            method: '$context.httpMethod',
            routeKey: '$context.routeKey',
            path: '$context.path',
            status: '$context.status',
            latencyMs: '$context.responseLatency',
            integrationStatus: '$context.integrationStatus',
            integrationError: '$context.integrationErrorMessage',
            authorizerError: '$context.authorizer.error',
          }),
        ),
      },
    });

    this.authorizer = new HttpLambdaAuthorizer('ApiKeyAuthorizer', props.authorizer, {
      authorizerName: 'api-key',
      responseTypes: [HttpLambdaResponseType.SIMPLE],
      identitySource: [],
      resultsCacheTtl: Duration.seconds(0),
    });
    // Bound here, so the authorizer (and its invoke permission) is made once in this stack, whichever route comes first.
    // (`bind` reads the route's API and stack only: the $default route's does; the authorizer is not attached to it.)
    this.authorizer.bind({ route: this.httpApi.node.findChild('DefaultRoute') as IHttpRoute, scope: this.httpApi });
    // CDK writes `IdentitySource: []`; the API documents it as optional for REQUEST authorizers,
    // so leave it out rather than rely on how an empty list is read.
    (
      this.httpApi.node.tryFindChild('ApiKeyAuthorizer')?.node.defaultChild as CfnResource | undefined
    )?.addPropertyDeletionOverride('IdentitySource');
  }

  /**
   * The route of one route-table entry, made in `scope` (its function's nested stack): the route, its
   * integration and the permission to invoke the function all live beside the function.
   */
  addRoute(scope: Construct, route: RouteDef, handler: IFunction): HttpRoute {
    const added = new HttpRoute(scope, `Route-${route.id}`, {
      httpApi: this.httpApi,
      routeKey: HttpRouteKey.with(route.path, HttpMethod[route.method]),
      integration: new HttpLambdaIntegration(`${route.id}Integration`, handler),
      // `none` routes are public; `sandbox` routes check the sandbox's own key in the handler.
      ...(route.auth === 'user' ? { authorizer: this.authorizer } : {}),
    });
    this.routes.set(route.id, added);
    return added;
  }

  get url(): string {
    return this.stage.url;
  }
}
