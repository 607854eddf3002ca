import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';

/** The bridge: routes the program inside a sandbox calls with its own key. */
export const sandboxCheckIn = defineOperation('sandboxCheckIn', ({ params, headers, body }, { sandboxBridge }) =>
  sandboxBridge.checkIn(params.sandbox_id, keyFromHeaders(headers), body),
);

export const sandboxHeartbeat = defineOperation('sandboxHeartbeat', ({ params, headers, body }, { sandboxBridge }) =>
  sandboxBridge.heartbeat(params.sandbox_id, keyFromHeaders(headers), body.active),
);

export const sandboxCommands = defineOperation('sandboxCommands', ({ params, headers, query }, { sandboxBridge }) =>
  sandboxBridge.pollCommands(params.sandbox_id, keyFromHeaders(headers), query.wait),
);

export const sandboxCommandAck = defineOperation('sandboxCommandAck', async ({ params, headers }, { sandboxBridge }) => {
  await sandboxBridge.ackCommand(params.sandbox_id, keyFromHeaders(headers), params.seq);
  return { success: true };
});
