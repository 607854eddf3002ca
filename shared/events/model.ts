import * as z from 'zod';
import { conversationIdSchema } from '#shared/protocol.ts';
import { dateTimeFilter, pageId, pageLimit } from '#shared/http/query.ts';

/** A position in a conversation's events: the `seq` of the last event seen (0: before the first). */
export const afterSeqParam = z.lazy(() =>
  z
    .string()
    .regex(/^[0-9]{1,16}$/, 'after_seq must be a non-negative integer')
    .transform(Number)
    .refine(Number.isSafeInteger, 'after_seq must be a non-negative integer'),
);

export const sortOrder = z.lazy(() => z.enum(['TIMESTAMP', 'TIMESTAMP_DESC']).default('TIMESTAMP'));

const timeFilter = dateTimeFilter;

export const eventSearchQuery = z.lazy(() =>
  z.object({
    conversation_id__eq: conversationIdSchema,
    kind__eq: z.string().max(64).optional(),
    timestamp__gte: timeFilter,
    timestamp__lt: timeFilter,
    sort_order: sortOrder,
    page_id: pageId,
    /** Start after this sequence number (the `seq` of a stream message): how a stream client fetches an `EventReference` or catches up. */
    after_seq: afterSeqParam.optional(),
    limit: pageLimit,
  }),
);
export type EventSearch = z.output<typeof eventSearchQuery>;

export const eventCountQuery = z.lazy(() => eventSearchQuery.unwrap().omit({ page_id: true, after_seq: true, limit: true, sort_order: true }));

export const eventPageSchema = z.lazy(() => z.object({ items: z.array(z.record(z.string(), z.unknown())), next_page_id: z.string().nullable() }));
