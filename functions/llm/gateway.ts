import { llmGatewayRoute } from '#shared/routes.ts';
import { type FunctionUrlCall, serveFunctionUrl } from '#shared/llm/function-url.ts';
import { llmGateway } from '#shared/services/llm-gateway.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { accountStore } from '#shared/wiring/aws/accounts.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { conversationKeySecret } from '#shared/wiring/aws/keys.ts';
import { sealer } from '#shared/wiring/aws/kms.ts';
import { llmLedger, platformModels } from '#shared/wiring/aws/llm.ts';
import { platformLlmKey } from '#shared/wiring/aws/llm-keys.ts';
import { plans } from '#shared/wiring/aws/plans.ts';
import { usageBus } from '#shared/wiring/aws/usage-bus.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';

/** The LLM gateway: a function URL in response-streaming mode (Lambda's `awslambda.streamifyResponse`). */
const gateway = awsFunction<FunctionUrlCall, void>(
  llmGatewayRoute,
  {
    conversationStore,
    sandboxStore,
    accountStore,
    conversationKeySecret,
    sealer,
    plans,
    platformModels,
    platformLlmKey,
    llmLedger,
    usageStore,
    usageBus,
  },
  { llmGateway },
  (call, services) => serveFunctionUrl(call, services.llmGateway),
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
