import { llmGatewayRoute } from '#shared/routes.ts';
import { type FunctionUrlCall, serveFunctionUrl } from '#shared/llm/function-url.ts';
import { llmGateway } from '#shared/services/llm-gateway.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/** The LLM gateway: a function URL in response-streaming mode (Lambda's `awslambda.streamifyResponse`). */
const gateway = awsFunction<FunctionUrlCall, void>(llmGatewayRoute, { llmGateway }, (call, services) =>
  serveFunctionUrl(call, services.llmGateway),
);

/** Lambda's runtime global (Node 24 runtime); absent elsewhere (locally, tests, the tier's emulation sets its own). */
const runtime = (globalThis as unknown as { awslambda?: { streamifyResponse?: Streamify } }).awslambda;
type Streamify = (
  h: (event: unknown, stream: unknown, context: unknown) => Promise<void>,
) => (event: unknown, stream: unknown) => Promise<void>;

const serve = (event: unknown, stream: unknown) => gateway({ event, stream } as FunctionUrlCall);
export const handler = Object.assign(
  typeof runtime?.streamifyResponse === 'function' ? runtime.streamifyResponse(serve) : serve,
  { wiring: gateway.wiring },
);
