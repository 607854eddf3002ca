import { Duration, type CfnResource } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
  type HttpRoute,
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
  routes: readonly RouteDef[];
  /** The function of each route, by route id. */
  handlers: ReadonlyMap<string, IFunction>;
  authorizer: IFunction;
  fallback: IFunction;
  accessLogs: ILogGroup;
}

/**
 * The HTTP API: one route per route-table entry, `user` routes behind the Lambda REQUEST
 * authorizer, and `$default` for everything else. The authorizer has no identity source and no
 * cache (see docs/architecture.md, "Authorizer"): a key may come in either of two headers or not at
 * all (a browser's session cookie), and an identity source would reject a request lacking the one
 * it names before our authorizer ran.
 */
export class Api extends Construct {
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  /** API Gateway routes by route id. */
  readonly routes = new Map<string, HttpRoute>();

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

    const authorizer = new HttpLambdaAuthorizer('ApiKeyAuthorizer', props.authorizer, {
      authorizerName: 'api-key',
      responseTypes: [HttpLambdaResponseType.SIMPLE],
      identitySource: [],
      resultsCacheTtl: Duration.seconds(0),
    });
    for (const route of props.routes) {
      const handler = props.handlers.get(route.id);
      if (!handler) throw new Error(`No function for route ${route.id}`);
      const [added] = this.httpApi.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: new HttpLambdaIntegration(`${route.id}Integration`, handler),
        // `none` routes are public; `sandbox` routes check the sandbox's own key in the handler.
        ...(route.auth === 'user' ? { authorizer } : {}),
      });
      this.routes.set(route.id, added!);
    }
    // CDK writes `IdentitySource: []`; the API documents it as optional for REQUEST authorizers,
    // so leave it out rather than rely on how an empty list is read.
    (
      this.httpApi.node.tryFindChild('ApiKeyAuthorizer')?.node.defaultChild as CfnResource | undefined
    )?.addPropertyDeletionOverride('IdentitySource');
  }

  get url(): string {
    return this.stage.url;
  }
}
