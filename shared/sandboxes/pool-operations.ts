import * as z from '#shared/zod.ts';
import { defineOperation } from '#shared/http/operation.ts';
import {
  poolCheckInBodySchema,
  poolCheckInResponseSchema,
  poolWaitResponseSchema,
  standbyParams,
} from '#shared/protocol.ts';

/** The pool routes a standby calls with its pool credential (the wrapper's key check gives the operation its item). */
export const poolCheckIn = defineOperation(
  'poolCheckIn',
  () => ({ params: standbyParams, body: poolCheckInBodySchema, response: poolCheckInResponseSchema }),
  ({ body, standby }, { warmPool }) => warmPool.checkIn(standby, body.public_key),
);

export const poolWait = defineOperation(
  'poolWait',
  () => ({
    params: standbyParams,
    query: z.object({
      wait: z._default(z.coerce.number().check(z.int('wait must be whole seconds'), z.gte(0), z.lte(60)), 0),
    }),
    response: poolWaitResponseSchema,
  }),
  ({ query, standby }, { warmPool }) => warmPool.wait(standby, query.wait),
);
