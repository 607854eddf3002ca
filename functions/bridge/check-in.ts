import { keyFromHeaders } from '#shared/auth/api-keys.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('sandboxCheckIn', ({ params, headers, body }, { sandboxes }) =>
  sandboxes.checkIn(params.sandbox_id, keyFromHeaders(headers), body),
);
export const handler = awsHandler(operation);
