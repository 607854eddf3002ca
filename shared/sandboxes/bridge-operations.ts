import * as z from '#shared/zod.ts';
import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';
import {
  checkInBodySchema,
  checkInResponseSchema,
  commandsResponseSchema,
  heartbeatBodySchema,
  heartbeatResponseSchema,
  sandboxIdSchema,
  sandboxParams,
} from '#shared/protocol.ts';
import { successSchema } from '#shared/sandboxes/model.ts';

/** The bridge: routes the program inside a sandbox calls with its own key. */
export const sandboxCheckIn = defineOperation(
  'sandboxCheckIn',
  () => ({ params: sandboxParams, body: checkInBodySchema, response: checkInResponseSchema }),
  ({ headers, body, sandbox }, { sandboxBridge }) => sandboxBridge.checkIn(sandbox, keyFromHeaders(headers), body),
);

export const sandboxHeartbeat = defineOperation(
  'sandboxHeartbeat',
  () => ({ params: sandboxParams, body: heartbeatBodySchema, response: heartbeatResponseSchema }),
  ({ body, sandbox }, { sandboxBridge }) => sandboxBridge.heartbeat(sandbox, body.active, body.restore_ms),
);

export const sandboxCommands = defineOperation(
  'sandboxCommands',
  () => ({
    params: sandboxParams,
    query: z.object({
      wait: z._default(z.coerce.number().check(z.int('wait must be whole seconds'), z.gte(0), z.lte(60)), 0),
    }),
    response: commandsResponseSchema,
  }),
  ({ query, sandbox }, { sandboxBridge }) => sandboxBridge.pollCommands(sandbox, query.wait),
);

export const sandboxCommandAck = defineOperation(
  'sandboxCommandAck',
  () => ({
    params: z.object({
      sandbox_id: sandboxIdSchema,
      seq: z.coerce.number().check(z.int(), z.gte(0), z.lte(Number.MAX_SAFE_INTEGER)),
    }),
    response: successSchema,
  }),
  async ({ params, sandbox }, { sandboxBridge }) => {
    await sandboxBridge.ackCommand(sandbox, params.seq);
    return { success: true };
  },
);
