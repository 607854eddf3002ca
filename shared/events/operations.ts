import * as z from '#shared/zod.ts';
import { eventCountQuery, eventPageSchema, eventSearchQuery } from '#shared/events/model.ts';
import { defineOperation } from '#shared/http/operation.ts';

/** The event routes. */
export const searchEvents = defineOperation(
  'searchEvents',
  () => ({ query: eventSearchQuery, response: eventPageSchema, errors: [404] }),
  ({ userId, query }, { events }) => events.search(userId, query),
);

export const countEvents = defineOperation(
  'countEvents',
  () => ({ query: eventCountQuery, response: z.number().check(z.int()), errors: [404] }),
  ({ userId, query }, { events }) => events.count(userId, query),
);
