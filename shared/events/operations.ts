import { defineOperation } from '#shared/http/operation.ts';

/** The event routes. */
export const searchEvents = defineOperation('searchEvents', ({ userId, query }, { events }) => events.search(userId, query));

export const countEvents = defineOperation('countEvents', ({ userId, query }, { events }) => events.count(userId, query));
