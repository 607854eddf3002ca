import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('sandboxHeartbeat', ({ params, headers, body }, { sandboxes }) =>
  sandboxes.heartbeat(params.sandbox_id, keyFromHeaders(headers), body.active),
);
export const handler = awsHandler(operation);
