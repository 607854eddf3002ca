import { ApiGatewayStreamEviction } from '#shared/stream/api-gateway-eviction.ts';
import type { Builder } from '#shared/wiring/adapters.ts';
import { requireEnv } from '#shared/env.ts';

/** DeleteConnection on the stream API's stage for a person's connections (byUser): a module of its own, so only the functions that close streams carry the management client. */
export const streamEviction: Builder<'streamEviction'> = () =>
  new ApiGatewayStreamEviction(requireEnv('STREAM_CALLBACK_URL', "the stream API stage's @connections endpoint"));
