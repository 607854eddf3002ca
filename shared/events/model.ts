import * as z from '#shared/zod.ts';
import { conversationIdSchema } from '#shared/protocol.ts';
import { dateTimeFilter, pageId, pageLimit } from '#shared/http/query.ts';

/** A position in a conversation's events: the `seq` of the last event seen (0: before the first). */
export const afterSeqParam = z.lazy(() =>
  z
    .pipe(z.string().check(z.regex(/^[0-9]{1,16}$/, 'after_seq must be a non-negative integer')), z.transform(Number))
    .check(z.refine(Number.isSafeInteger, 'after_seq must be a non-negative integer')),
);

export const sortOrder = z.lazy(() => z._default(z.enum(['TIMESTAMP', 'TIMESTAMP_DESC']), 'TIMESTAMP'));

const timeFilter = dateTimeFilter;

export const eventSearchQuery = z.lazy(() =>
  z.object({
    conversation_id__eq: conversationIdSchema,
    kind__eq: z.optional(z.string().check(z.maxLength(64))),
    timestamp__gte: timeFilter,
    timestamp__lt: timeFilter,
    sort_order: sortOrder,
    page_id: pageId,
    /** Start after this sequence number (the `seq` of a stream message): how a stream client fetches an `EventReference` or catches up. */
    after_seq: z.optional(afterSeqParam),
    limit: pageLimit,
  }),
);
export type EventSearch = z.output<typeof eventSearchQuery>;

export const eventCountQuery = z.lazy(() =>
  z.omit(z.unlazy(eventSearchQuery), { page_id: true, after_seq: true, limit: true, sort_order: true }),
);

export const eventPageSchema = z.lazy(() =>
  z.object({
    items: z.array(z.record(z.string(), z.unknown())),
    next_page_id: z.nullable(z.string()),
    // Ascending searches only: the cursor to poll with for events that arrive later (EventPageView).
    follow_page_id: z.optional(z.nullable(z.string())),
  }),
);
