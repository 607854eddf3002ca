import * as z from 'zod';
import { conversationIdSchema } from '#shared/conversations/model.ts';
import { dateTimeFilter, pageId, pageLimit } from '#shared/http/query.ts';

/** Largest event we store (DynamoDB items stop at 400 KB; the agent truncates long outputs anyway). */
export const MAX_EVENT_BYTES = 256 * 1024;

/**
 * The envelope every event has (OpenHands' event base). The kind-specific members pass through as
 * the agent sent them: the control plane stores and serves events, it does not interpret them.
 */
export const eventSchema = z
  .looseObject({
    kind: z.string().regex(/^[A-Za-z][A-Za-z0-9]{0,63}$/, 'kind must be an event class name'),
    id: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'id must be 1-64 of A-Z a-z 0-9 -'),
    timestamp: z.iso.datetime({ offset: true, local: true, message: 'timestamp must be an ISO-8601 date-time' }),
    source: z.enum(['agent', 'user', 'environment']),
  })
  .refine((e) => Buffer.byteLength(JSON.stringify(e)) <= MAX_EVENT_BYTES, `an event must be at most ${MAX_EVENT_BYTES} bytes`);
export type AgentEventEnvelope = z.output<typeof eventSchema>;

/** The webhook's query: the sequence number of the batch's first event (the others follow it, one each). */
export const eventPostQuery = z.object({
  first_seq: z.coerce
    .number({ error: 'first_seq must be a positive integer' })
    .int('first_seq must be a positive integer')
    .min(1, 'first_seq must be a positive integer')
    .max(Number.MAX_SAFE_INTEGER, 'first_seq must be a positive integer'),
});

/** A position in a conversation's events: the `seq` of the last event seen (0: before the first). */
export const afterSeqParam = z
  .string()
  .regex(/^[0-9]{1,16}$/, 'after_seq must be a non-negative integer')
  .transform(Number)
  .refine(Number.isSafeInteger, 'after_seq must be a non-negative integer');

export const sortOrder = z.enum(['TIMESTAMP', 'TIMESTAMP_DESC']).default('TIMESTAMP');

const timeFilter = dateTimeFilter;

export const eventSearchQuery = z.object({
  conversation_id__eq: conversationIdSchema,
  kind__eq: z.string().max(64).optional(),
  timestamp__gte: timeFilter,
  timestamp__lt: timeFilter,
  sort_order: sortOrder,
  page_id: pageId,
  /** Start after this sequence number (the `seq` of a stream message): how a stream client fetches an `EventReference` or catches up. */
  after_seq: afterSeqParam.optional(),
  limit: pageLimit,
});
export type EventSearch = z.output<typeof eventSearchQuery>;

export const eventCountQuery = eventSearchQuery.omit({ page_id: true, after_seq: true, limit: true, sort_order: true });

export const eventPageSchema = z.object({ items: z.array(z.record(z.string(), z.unknown())), next_page_id: z.string().nullable() });
