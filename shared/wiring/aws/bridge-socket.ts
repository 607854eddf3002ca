import { ApiGatewayCommandPush } from '#shared/sandboxes/apigateway-command-push.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/** The API Gateway management client: only in the bundles of the routes that queue commands. */
export const commandPush: Builder<'commandPush'> = () =>
  new ApiGatewayCommandPush(requireEnv('BRIDGE_SOCKET_ENDPOINT', "the bridge socket API's management endpoint"));
