import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpApiEmulator } from '#test/tier/api-gateway.ts';
import type { InvokeResult, LambdaService } from '#test/tier/lambda.ts';
import { names, STACK, type Template } from '#test/tier/template.ts';

/**
 * API Gateway's own answers, on a two-route API whose functions are scripted here (the tier's
 * deployment tests run the real ones): what the authorizer's answer, a crash and a malformed
 * result become, and what the route and authorizer receive.
 */
const AUTH = 'arn:aws:lambda:eu-west-1:123456789012:function:auth';
const ROUTE = 'arn:aws:lambda:eu-west-1:123456789012:function:route';
/** The API's id as the template resolves `Ref: Api` (the emulator takes only the resources of its own API). */
const API_ID = names(STACK, 'Api', { Type: 'AWS::ApiGatewayV2::Api', Properties: { ProtocolType: 'HTTP' } }).ref;
const template: Template = {
  Resources: {
    Api: { Type: 'AWS::ApiGatewayV2::Api', Properties: { ProtocolType: 'HTTP' } },
    Stage: { Type: 'AWS::ApiGatewayV2::Stage', Properties: { ApiId: API_ID, StageName: '$default' } },
    Auth: {
      Type: 'AWS::ApiGatewayV2::Authorizer',
      Properties: {
        ApiId: API_ID,
        AuthorizerType: 'REQUEST',
        AuthorizerUri: `arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/${AUTH}/invocations`,
        EnableSimpleResponses: true,
        AuthorizerPayloadFormatVersion: '2.0',
        AuthorizerResultTtlInSeconds: 0,
      },
    },
    Integration: {
      Type: 'AWS::ApiGatewayV2::Integration',
      Properties: { ApiId: API_ID, IntegrationType: 'AWS_PROXY', IntegrationUri: ROUTE, PayloadFormatVersion: '2.0' },
    },
    Item: {
      Type: 'AWS::ApiGatewayV2::Route',
      Properties: {
        ApiId: API_ID,
        RouteKey: 'POST /items/{id}',
        AuthorizationType: 'CUSTOM',
        AuthorizerId: 'Auth',
        Target: 'integrations/Integration',
      },
    },
    Open: {
      Type: 'AWS::ApiGatewayV2::Route',
      Properties: {
        ApiId: API_ID,
        RouteKey: 'GET /open',
        AuthorizationType: 'NONE',
        Target: 'integrations/Integration',
      },
    },
  },
};

let authorizer: (event: any) => InvokeResult;
let route: (event: any) => InvokeResult;
const seen: any[] = [];
const lambda = {
  invokeAs: async (_principal: string, _source: string, arn: string, event: any) => {
    seen.push(event);
    return arn === AUTH ? authorizer(event) : route(event);
  },
} as unknown as LambdaService;
const api = new HttpApiEmulator(template, lambda);
beforeAll(() => api.start());
afterAll(() => api.close());
const post = (headers: Record<string, string> = {}) =>
  fetch(`${api.url}/items/a%20b?x=1&x=2`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: '{"n":1}',
  });

describe('the HTTP API emulation', () => {
  it('passes payload 2.0 to the authorizer and the route, with the authorizer context', async () => {
    authorizer = () => ({ ok: true, result: { isAuthorized: true, context: { userId: 'u1' } } });
    route = () => ({ ok: true, result: { statusCode: 201, headers: { 'x-a': 'b' }, body: 'made' } });
    seen.length = 0;
    const res = await post({ cookie: 'a=1; b=2' });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-a')).toBe('b');
    expect(await res.text()).toBe('made');
    const [auth, event] = seen;
    expect(auth).toMatchObject({
      type: 'REQUEST',
      routeKey: 'POST /items/{id}',
      routeArn: `arn:aws:execute-api:eu-west-1:123456789012:${API_ID}/$default/POST/items/a%20b`,
    });
    expect(auth.body).toBeUndefined();
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'POST /items/{id}',
      rawPath: '/items/a%20b',
      rawQueryString: 'x=1&x=2',
      queryStringParameters: { x: '1,2' },
      pathParameters: { id: 'a b' },
      cookies: ['a=1', 'b=2'],
      body: '{"n":1}',
      isBase64Encoded: false,
      requestContext: { authorizer: { lambda: { userId: 'u1' } }, stage: '$default', http: { method: 'POST' } },
    });
    expect(event.headers.cookie).toBeUndefined();
  });

  it('403 when the authorizer says no, 500 when it fails or the route crashes or answers nonsense', async () => {
    authorizer = () => ({ ok: true, result: { isAuthorized: false } });
    expect(await (await post()).json()).toEqual({ message: 'Forbidden' });
    authorizer = () => ({ ok: false, error: { errorType: 'Error', errorMessage: 'boom' } });
    expect((await post()).status).toBe(500);
    authorizer = () => ({ ok: true, result: { isAuthorized: true } });
    route = () => ({ ok: false, error: { errorType: 'Error', errorMessage: 'crash' } });
    const crashed = await post();
    expect(crashed.status).toBe(500);
    expect(await crashed.json()).toEqual({ message: 'Internal Server Error' });
    route = () => ({ ok: true, result: { statusCode: 'two hundred' } });
    expect((await post()).status).toBe(500);
  });

  it('a result without statusCode is a 200 JSON body; no route and no $default is 404', async () => {
    route = () => ({ ok: true, result: { hello: 'world' } });
    const res = await fetch(`${api.url}/open`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ hello: 'world' });
    const missing = await fetch(`${api.url}/nowhere`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ message: 'Not Found' });
  });

  it('refuses settings API Gateway would reject: a cache without an identity source', () => {
    const cached = structuredClone(template);
    cached.Resources.Auth!.Properties.AuthorizerResultTtlInSeconds = 300;
    expect(() => new HttpApiEmulator(cached, lambda)).toThrow(/caching needs an identity source/);
  });
});
